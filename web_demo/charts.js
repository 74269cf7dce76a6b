// Chart.js line charts in the demo's style (Chart is the global of vendor/chart.umd.js, served
// from this site: no CDN). Each function returns a Chart whose datasets the caller fills.
/* global Chart */

const INK = '#1f2933';
const MUTED = '#6b7785';
const GRID = '#e8ecf0';
export const COLORS = { accent: '#3b5bdb', second: '#0c8599', warn: '#e8590c', neutral: '#98a2ad' };

function baseOptions({ yTitle, yMin, yMax, suggestedMin, percent = false, xTitle = 'round' }) {
  return {
    responsive: true,
    maintainAspectRatio: false,
    animation: { duration: 250 },
    interaction: { mode: 'index', intersect: false },
    plugins: {
      legend: {
        position: 'bottom',
        labels: { color: MUTED, boxWidth: 12, boxHeight: 2, padding: 14, font: { size: 12 } },
      },
      tooltip: {
        callbacks: {
          label: (ctx) => `${ctx.dataset.label}: ${ctx.parsed.y == null ? '–'
            : percent ? `${ctx.parsed.y.toFixed(1)}%` : ctx.parsed.y.toFixed(4)}`,
        },
      },
    },
    scales: {
      x: {
        title: { display: true, text: xTitle, color: MUTED, font: { size: 12 } },
        grid: { display: false },
        ticks: { color: MUTED },
        border: { color: GRID },
      },
      y: {
        min: yMin,
        max: yMax,
        suggestedMin,
        title: { display: Boolean(yTitle), text: yTitle, color: MUTED, font: { size: 12 } },
        grid: { color: GRID },
        ticks: { color: MUTED, callback: (v) => (percent ? `${v}%` : v) },
        border: { display: false },
      },
    },
  };
}

function line(label, color, { dashed = false, fill = false } = {}) {
  return {
    label,
    data: [],
    borderColor: color,
    backgroundColor: fill ? `${color}1f` : color,
    pointBackgroundColor: color,
    pointRadius: dashed ? 0 : 3.5,
    pointHoverRadius: 5,
    borderWidth: dashed ? 1.5 : 2.25,
    borderDash: dashed ? [5, 4] : [],
    fill,
    tension: 0.25,
    spanGaps: true,
  };
}

function create(canvas, datasets, options) {
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.color = INK;
  return new Chart(canvas, { type: 'line', data: { labels: [], datasets }, options });
}

/** Dataset 0: eval accuracy (%) of each round's model; dataset 1: the initial model's, dashed. */
export function accuracyChart(canvas) {
  return create(canvas, [
    line('eval accuracy', COLORS.accent, { fill: true }),
    line('initial model', COLORS.neutral, { dashed: true }),
  ], baseOptions({ yTitle: 'accuracy', percent: true, suggestedMin: 50, yMax: 100 }));
}

/** Dataset 0: eval loss of each round's model; dataset 1: mean train loss the clients reported. */
export function lossChart(canvas) {
  return create(canvas, [
    line('eval loss', COLORS.accent),
    line('train loss (clients)', COLORS.second),
  ], baseOptions({ yTitle: 'cross entropy', yMin: 0 }));
}

/**
 * Generic chart of per-round series: [{label, color}] → datasets in that order. A buffered
 * population's charts are per version: the caller sets options.scales.x.title.text.
 */
export function roundsChart(canvas, series, { yTitle = '', yMin = 0, xTitle = 'round' } = {}) {
  return create(canvas, series.map((s) => line(s.label, s.color, { dashed: s.dashed })),
    baseOptions({ yTitle, yMin, xTitle }));
}
