/** The parts of V8's `.cpuprofile` format (what `node --cpu-prof` writes) that the profile benches read. */
export interface CallFrame {
  functionName: string;
  url: string;
  /** 0-based. */
  lineNumber: number;
  /** 0-based. */
  columnNumber: number;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  /** µs, on the profiler's clock. */
  startTime: number;
  endTime: number;
  /** The node of each sample, and the µs since the sample before it. */
  samples: number[];
  timeDeltas: number[];
}
