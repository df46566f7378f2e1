import { zoneOf } from "../format.js";
import type { ThroughputMinuteJson } from "../types.js";

const WIDTH = 720;
const HEIGHT = 160;
const PAD_LEFT = 36;
const PAD_BOTTOM = 20;
const PAD_TOP = 8;

/**
 * Jobs per minute over the last hour: finished attempts as stacked bars
 * (succeeded below, failed above) and jobs enqueued as a line. Plain SVG;
 * each bar has a <title> for the exact numbers.
 */
export function ThroughputChart({ minutes }: { minutes: ThroughputMinuteJson[] }) {
  const peak = Math.max(1, ...minutes.map((m) => Math.max(m.succeeded + m.failed, m.enqueued)));
  const scale = niceCeiling(peak);
  const plotWidth = WIDTH - PAD_LEFT;
  const plotHeight = HEIGHT - PAD_BOTTOM - PAD_TOP;
  const step = plotWidth / Math.max(1, minutes.length);
  const y = (value: number) => PAD_TOP + plotHeight - (value / scale) * plotHeight;
  const line = minutes.map((m, i) => `${(PAD_LEFT + i * step + step / 2).toFixed(1)},${y(m.enqueued).toFixed(1)}`).join(" ");
  const totals = minutes.reduce(
    (sum, m) => ({ enqueued: sum.enqueued + m.enqueued, succeeded: sum.succeeded + m.succeeded, failed: sum.failed + m.failed }),
    { enqueued: 0, succeeded: 0, failed: 0 },
  );
  return (
    <figure class="chart" data-testid="throughput-chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label="jobs per minute over the last hour">
        {[0, 0.5, 1].map((fraction) => (
          <g key={fraction}>
            <line class="grid" x1={PAD_LEFT} x2={WIDTH} y1={y(scale * fraction)} y2={y(scale * fraction)} />
            <text class="axis" x={PAD_LEFT - 4} y={y(scale * fraction) + 4} text-anchor="end">
              {formatTick(scale * fraction)}
            </text>
          </g>
        ))}
        {minutes.map((m, i) => {
          const x = PAD_LEFT + i * step + 1;
          const width = Math.max(1, step - 2);
          return (
            <g key={m.minute}>
              <title>{`${new Date(m.minute).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })} ${zoneOf(new Date(m.minute))}: ${m.enqueued} enqueued, ${m.succeeded} succeeded, ${m.failed} failed`}</title>
              <rect class="bar-ok" x={x} width={width} y={y(m.succeeded)} height={y(0) - y(m.succeeded)} />
              <rect class="bar-failed" x={x} width={width} y={y(m.succeeded + m.failed)} height={y(m.succeeded) - y(m.succeeded + m.failed)} />
            </g>
          );
        })}
        <polyline class="line-enqueued" points={line} />
        <text class="axis" x={PAD_LEFT} y={HEIGHT - 4}>
          60 min ago
        </text>
        <text class="axis" x={WIDTH} y={HEIGHT - 4} text-anchor="end">
          now
        </text>
      </svg>
      <figcaption>
        Last hour: <span class="legend legend-enqueued">{totals.enqueued} enqueued</span>
        <span class="legend legend-ok">{totals.succeeded} succeeded</span>
        <span class="legend legend-failed">{totals.failed} failed</span> (attempts per minute)
      </figcaption>
    </figure>
  );
}

/** 1, 2, 5, 10, 20, 50… at or above `value`. */
function niceCeiling(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const factor of [1, 2, 5, 10]) if (factor * magnitude >= value) return factor * magnitude;
  return 10 * magnitude;
}

function formatTick(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(value % 1000 === 0 ? 0 : 1)}k` : String(Math.round(value * 10) / 10);
}
