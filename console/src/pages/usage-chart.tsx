import type { perDay } from './usage-rows';

const COLOURS = ['#2563eb', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2'];
const HEIGHT = 160;
const BAR = 28;

/** Stacked bars per day of one measure (images or cost), one colour per group, as SVG. */
export function UsageChart(props: {
  title: string;
  days: ReturnType<typeof perDay>;
  measure: 'images' | 'cost';
}) {
  const groups = [...new Set(props.days.flatMap(([, byGroup]) => [...byGroup.keys()]))];
  const totals = props.days.map(([, byGroup]) =>
    [...byGroup.values()].reduce((sum, value) => sum + value[props.measure], 0),
  );
  const top = Math.max(...totals, 0);
  if (top === 0)
    return (
      <figure class="chart">
        <figcaption>{props.title}</figcaption>
        <p class="hint">Nothing recorded in these rows.</p>
      </figure>
    );
  const width = Math.max(props.days.length * (BAR + 12) + 12, 120);
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <svg
        viewBox={`0 0 ${width} ${HEIGHT + 20}`}
        width={width}
        height={HEIGHT + 20}
        role="img"
        aria-label={props.title}
      >
        {props.days.map(([day, byGroup], dayIndex) => {
          let y = HEIGHT;
          return (
            <g key={day}>
              {groups.map((group, groupIndex) => {
                const value = byGroup.get(group)?.[props.measure] ?? 0;
                const h = (value / top) * (HEIGHT - 10);
                y -= h;
                return (
                  <rect
                    key={group}
                    x={12 + dayIndex * (BAR + 12)}
                    y={y}
                    width={BAR}
                    height={h}
                    fill={COLOURS[groupIndex % COLOURS.length]}
                  >
                    <title>{`${day} ${group}: ${props.measure === 'cost' ? value.toFixed(4) : value}`}</title>
                  </rect>
                );
              })}
              <text
                x={12 + dayIndex * (BAR + 12) + BAR / 2}
                y={HEIGHT + 14}
                text-anchor="middle"
                class="axis"
              >
                {day.slice(5)}
              </text>
            </g>
          );
        })}
      </svg>
      <ul class="legend">
        {groups.map((group, index) => (
          <li key={group}>
            <svg width="10" height="10" aria-hidden="true">
              <rect width="10" height="10" fill={COLOURS[index % COLOURS.length]} />
            </svg>{' '}
            {group}
          </li>
        ))}
      </ul>
    </figure>
  );
}
