import { day, h, svg } from './dom.ts';

export interface PassRateDay {
  date: string;
  passed: number;
  failed: number;
}

/** The plot's margins inside the picture: room for the percentages on the left and the days below. */
export interface ChartBox {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

const box: ChartBox = { width: 320, height: 130, left: 36, right: 12, top: 10, bottom: 22 };

/** Where each day's point sits in the box; a day without runs has no rate (and no point). */
export function chartPoints(days: readonly PassRateDay[], area: ChartBox): Array<{ x: number; y: number; rate: number | null }> {
  const span = Math.max(days.length - 1, 1);
  const plotWidth = area.width - area.left - area.right;
  const plotHeight = area.height - area.top - area.bottom;
  return days.map((entry, index) => {
    const runs = entry.passed + entry.failed;
    const rate = runs === 0 ? null : entry.passed / runs;
    const x = area.left + (days.length === 1 ? plotWidth / 2 : (index / span) * plotWidth);
    const y = area.top + (1 - (rate ?? 0)) * plotHeight;
    return { x: Math.round(x * 10) / 10, y: Math.round(y * 10) / 10, rate };
  });
}

/**
 * The pass rate of mirror replays per day, as a small inline SVG line with a
 * point per day, and the same numbers as a table for whoever cannot see it.
 */
export function passRateChart(days: readonly PassRateDay[]): HTMLElement {
  const points = chartPoints(days, box);
  const drawn = points.filter((point) => point.rate !== null);
  const last = days.at(-1);
  const lastRate = last === undefined || last.passed + last.failed === 0 ? null : Math.round((100 * last.passed) / (last.passed + last.failed));
  const description = days.length === 0 ? 'No replays yet.' : `Pass rate over ${days.length} ${days.length === 1 ? 'day' : 'days'}${lastRate === null ? '' : `, ${lastRate}% on the last`}.`;
  const titleId = `chart-title-${days.length}-${last?.date ?? 'none'}`;
  const plotHeight = box.height - box.top - box.bottom;
  const first = points[0];
  const final = points.at(-1);
  const picture = svg(
    'svg',
    { class: 'chart', viewBox: `0 0 ${box.width} ${box.height}`, role: 'img', 'aria-labelledby': titleId },
    svg('title', { id: titleId }, description),
    [0, 0.5, 1].map((level) => {
      const y = box.top + (1 - level) * plotHeight;
      return [
        svg('line', { class: 'grid', x1: box.left, x2: box.width - box.right, y1: y, y2: y }),
        svg('text', { class: 'axis', x: box.left - 4, y: y + 3, 'text-anchor': 'end' }, `${Math.round(level * 100)}%`),
      ];
    }),
    first === undefined ? null : svg('text', { class: 'axis', x: first.x, y: box.height - 6, 'text-anchor': days.length === 1 ? 'middle' : 'start' }, day(days[0]!.date)),
    final === undefined || days.length < 2 ? null : svg('text', { class: 'axis', x: final.x, y: box.height - 6, 'text-anchor': 'end' }, day(days.at(-1)!.date)),
    drawn.length > 1 ? svg('polyline', { class: 'line', points: drawn.map((point) => `${point.x},${point.y}`).join(' ') }) : null,
    drawn.map((point) => svg('circle', { class: 'point', cx: point.x, cy: point.y, r: 3.5 })),
  );
  const table = h(
    'table',
    { class: 'chart-data' },
    h('caption', { class: 'visually-hidden' }, 'Replays per day'),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Day'), h('th', { scope: 'col' }, 'Passed'), h('th', { scope: 'col' }, 'Failed'))),
    h(
      'tbody',
      null,
      days.map((entry) => h('tr', null, h('th', { scope: 'row' }, day(entry.date)), h('td', null, String(entry.passed)), h('td', null, String(entry.failed)))),
    ),
  );
  return h('figure', { class: 'chart-figure' }, picture, h('figcaption', null, description), h('details', null, h('summary', null, 'The numbers'), table));
}
