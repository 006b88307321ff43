/**
 * One answered model call of a simulated conversation (a run's generated side): replayed, not asked
 * again, when the conversation is redone after its worker died.
 */
export interface RunConversationCallTable {
  run_id: string;
  launch_index: number;
  position: number;
  /** The call's place in its conversation, from 0. */
  call_index: number;
  /** `user` (the simulated user) or `target` (the model under test). */
  role: string;
  model: string;
  /** The answered call (its body, text, usage, cost, latency, serving model) as JSON. */
  result: string;
  created_at: string;
}
