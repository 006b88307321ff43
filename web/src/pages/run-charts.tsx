import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  Title,
  Tooltip,
} from 'chart.js';
import { Bar } from 'react-chartjs-2';
import { useApi } from '../api';
import { ErrorBox } from '../components';
import type { RunDetail } from '../types';
import type { ResultRow } from './result-rows';

// Only the parts of Chart.js these bar charts use, so the bundle carries nothing else.
Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend, Title);

const COLORS = ['#2f5bd3', '#e07b24', '#2c9c69', '#b83b5e', '#7a5cc4', '#8a8f2a', '#1f93a8', '#c7502f'];

interface Distribution {
  bins: number;
  series: { launch_index: number; evaluator_id: string; counts: number[] }[];
}

function byModel(rows: ResultRow[], value: (row: ResultRow) => number | null) {
  const evaluators = [...new Map(rows.map((r) => [r.evaluatorId, r.evaluator])).entries()];
  const models = [...new Map(rows.map((r) => [r.launch, r.model])).entries()];
  return {
    labels: evaluators.map(([, name]) => name),
    datasets: models.map(([launch, model], i) => ({
      label: model,
      backgroundColor: COLORS[i % COLORS.length],
      data: evaluators.map(([id]) => {
        const row = rows.find((r) => r.launch === launch && r.evaluatorId === id);
        return row ? value(row) : null;
      }),
    })),
  };
}

const unitScale = (title: string) => ({
  responsive: true,
  maintainAspectRatio: false,
  animation: false as const,
  plugins: { title: { display: true, text: title }, legend: { position: 'bottom' as const } },
  scales: { y: { min: 0, max: 1 } },
});

/** Score and pass rate per model and evaluator, and the distribution of scores from the samples. */
export default function RunCharts(props: { base: string; detail: RunDetail; rows: ResultRow[] }) {
  const distribution = useApi<Distribution>(`${props.base}/distribution`);
  const names = new Map(props.detail.evaluators.map((e) => [e.id, e.name]));
  const models = new Map(props.rows.map((r) => [r.launch, r.model]));
  const bins = distribution.data?.bins ?? 10;
  const binLabels = Array.from(
    { length: bins },
    (_, i) => `${(i / bins).toFixed(1)}–${((i + 1) / bins).toFixed(1)}`,
  );
  const evaluatorIds = [...new Set((distribution.data?.series ?? []).map((s) => s.evaluator_id))];

  return (
    <div className="charts" data-testid="run-charts">
      <div className="chart">
        <Bar data={byModel(props.rows, (r) => r.avgScore)} options={unitScale('Average score')} />
      </div>
      <div className="chart">
        <Bar data={byModel(props.rows, (r) => r.passRate)} options={unitScale('Pass rate')} />
      </div>
      <ErrorBox error={distribution.error} />
      {evaluatorIds.map((id) => (
        <div className="chart" key={id}>
          <Bar
            data={{
              labels: binLabels,
              datasets: (distribution.data?.series ?? [])
                .filter((s) => s.evaluator_id === id)
                .map((s, i) => ({
                  label: models.get(s.launch_index) ?? `launch ${s.launch_index}`,
                  backgroundColor: COLORS[i % COLORS.length],
                  data: s.counts,
                })),
            }}
            options={{
              responsive: true,
              maintainAspectRatio: false,
              animation: false,
              plugins: {
                title: { display: true, text: `Score distribution: ${names.get(id) ?? id}` },
                legend: { position: 'bottom' },
              },
              scales: { y: { beginAtZero: true, ticks: { precision: 0 } } },
            }}
          />
        </div>
      ))}
    </div>
  );
}
