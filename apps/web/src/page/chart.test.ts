import { describe, expect, it } from 'vitest';
import { chartPoints } from './chart.ts';

const area = { width: 320, height: 130, left: 36, right: 12, top: 10, bottom: 22 };

describe('the pass-rate chart', () => {
  it('puts a day that all passed at the top, one that all failed at the bottom, and spreads the days across the plot', () => {
    const points = chartPoints(
      [
        { date: '2026-03-01', passed: 0, failed: 2 },
        { date: '2026-03-02', passed: 1, failed: 1 },
        { date: '2026-03-03', passed: 3, failed: 0 },
      ],
      area,
    );
    expect(points).toEqual([
      { x: 36, y: 108, rate: 0 },
      { x: 172, y: 59, rate: 0.5 },
      { x: 308, y: 10, rate: 1 },
    ]);
  });

  it('gives a day without runs no rate (no point is drawn), and centres a single day', () => {
    expect(chartPoints([{ date: '2026-03-01', passed: 0, failed: 0 }], area)).toEqual([{ x: 172, y: 108, rate: null }]);
    expect(chartPoints([], area)).toEqual([]);
  });
});
