import {
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Title,
  Tooltip,
} from 'chart.js';
import { Line } from 'react-chartjs-2';
import type { MonitorResults } from '../types';

// Only the parts of Chart.js these line charts use.
Chart.register(LineController, LineElement, PointElement, CategoryScale, LinearScale, Tooltip, Legend, Title);

const COLORS = ['#2f5bd3', '#e07b24', '#2c9c69', '#b83b5e', '#7a5cc4', '#8a8f2a', '#1f93a8', '#c7502f'];

type Stats = MonitorResults['totals'][number];

/** The bucket's start as a short label: the time of day within a day, the date beyond. */
function label(start: string, bucket: MonitorResults['bucket']): string {
  const d = new Date(start);
  if (bucket === 'day') return d.toLocaleDateString();
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

function series(results: MonitorResults, value: (s: Stats) => number | null) {
  const evaluators = results.totals.map((t) => [t.evaluator, t.name] as const);
  return {
    labels: results.buckets.map((b) => label(b.start, results.bucket)),
    datasets: evaluators.map(([id, name], i) => ({
      label: name,
      borderColor: COLORS[i % COLORS.length],
      backgroundColor: COLORS[i % COLORS.length],
      spanGaps: true,
      tension: 0.2,
      data: results.buckets.map((b) => {
        const s = b.evaluators.find((e) => e.evaluator === id);
        return s ? value(s) : null;
      }),
    })),
  };
}

const passRate = (s: Stats) => {
  const decided = s.num_passed + s.num_failed;
  return decided > 0 ? s.num_passed / decided : null;
};

const options = (title: string) => ({
  responsive: true,
  maintainAspectRatio: false,
  animation: false as const,
  plugins: { title: { display: true, text: title }, legend: { position: 'bottom' as const } },
  scales: { y: { min: 0, max: 1 } },
});

/** Pass rate and average score per evaluator over the time buckets. */
export default function MonitorCharts(props: { results: MonitorResults }) {
  return (
    <div className="charts" data-testid="monitor-charts">
      <div className="chart">
        <Line data={series(props.results, passRate)} options={options('Pass rate')} />
      </div>
      <div className="chart">
        <Line data={series(props.results, (s) => s.avg_score)} options={options('Average score')} />
      </div>
    </div>
  );
}
