// A small SVG chart of daily activity: one series per measure, each with its own line style and
// marker shape (so the series stay apart without colour), plus a table of the same numbers.

import { h, s } from "./ui.js";

const STYLES = [
  { cls: "series-a", dash: "", marker: "circle" },
  { cls: "series-b", dash: "6 4", marker: "square" },
  { cls: "series-c", dash: "2 3", marker: "triangle" },
];

function marker(kind, x, y, cls) {
  if (kind === "square") return s("rect", { class: `marker ${cls}`, x: x - 4, y: y - 4, width: 8, height: 8 });
  if (kind === "triangle") return s("polygon", { class: `marker ${cls}`, points: `${x},${y - 5} ${x + 5},${y + 4} ${x - 5},${y + 4}` });
  return s("circle", { class: `marker ${cls}`, cx: x, cy: y, r: 4 });
}

/** days: [{day: "YYYY-MM-DD", <measure>: n, ...}]; measures: [[key, label], ...]. */
export function activityChart(days, measures, title) {
  const width = 640, height = 240, left = 44, right = 28, top = 16, bottom = 42;
  const plotW = width - left - right, plotH = height - top - bottom;
  const highest = Math.max(1, ...days.flatMap((d) => measures.map(([key]) => Number(d[key]) || 0)));
  const tick = Math.ceil(highest / 4); // four whole-number steps
  const max = tick * 4;
  const step = days.length > 1 ? plotW / (days.length - 1) : 0;
  const x = (i) => left + (days.length > 1 ? i * step : plotW / 2);
  const y = (v) => top + plotH - (v / max) * plotH;
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  svg.append(s("title", {}, title));
  for (let k = 0; k <= 4; k++) {
    const value = tick * k;
    svg.append(s("line", { class: "grid", x1: left, x2: width - right, y1: y(value), y2: y(value) }),
      s("text", { class: "axis", x: left - 6, y: y(value), "text-anchor": "end" }, String(value)));
  }
  const every = Math.max(1, Math.ceil(days.length / 8));
  days.forEach((d, i) => {
    if (i % every === 0 || i === days.length - 1) {
      svg.append(s("text", { class: "axis", x: x(i), y: height - bottom + 16, "text-anchor": "middle" }, d.day.slice(5)));
    }
  });
  measures.forEach(([key, label], m) => {
    const style = STYLES[m % STYLES.length];
    const points = days.map((d, i) => `${x(i)},${y(Number(d[key]) || 0)}`).join(" ");
    if (days.length > 1) svg.append(s("polyline", { class: `line ${style.cls}`, points, "stroke-dasharray": style.dash || undefined }));
    days.forEach((d, i) => svg.append(marker(style.marker, x(i), y(Number(d[key]) || 0), style.cls)));
    const lx = left + m * 150, ly = height - 8;
    svg.append(s("line", { class: `line ${style.cls}`, x1: lx, x2: lx + 26, y1: ly - 4, y2: ly - 4, "stroke-dasharray": style.dash || undefined }),
      marker(style.marker, lx + 13, ly - 4, style.cls), s("text", { class: "legend", x: lx + 32, y: ly }, label));
  });
  return svg;
}

export function activityTable(days, measures, caption) {
  return h("table", { class: "numbers" }, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Day"), measures.map(([, label]) => h("th", { scope: "col" }, label)))),
    h("tbody", {}, days.map((d) => h("tr", {}, h("th", { scope: "row" }, d.day), measures.map(([key]) => h("td", {}, String(d[key] ?? 0)))))));
}
