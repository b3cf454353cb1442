// Loaded by tests/test_report.cpp into a page holding a report's SVG figures: lists every pair
// of <text> elements of one figure whose rendered boxes overlap, into <pre id="overlaps">.
// A box is the text's bounding box mapped through its transform to the page (a slanted
// label is a rotated rectangle), and two boxes overlap when no edge of either separates them
// (the separating axis test of two convex polygons), by more than half a pixel.
function corners(text) {
  const b = text.getBBox();
  const m = text.getCTM();
  const svg = text.ownerSVGElement;
  return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]].map(([x, y]) => {
    const p = svg.createSVGPoint();
    p.x = x;
    p.y = y;
    const q = p.matrixTransform(m);
    return [q.x, q.y];
  });
}
function separated(a, b) {
  for (const poly of [a, b]) {
    for (let i = 0; i < poly.length; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % poly.length];
      const nx = y2 - y1, ny = x1 - x2, len = Math.hypot(nx, ny) || 1;
      const project = (p) => (p[0] * nx + p[1] * ny) / len;
      const pa = a.map(project), pb = b.map(project);
      if (Math.max(...pa) <= Math.min(...pb) + 0.5 || Math.max(...pb) <= Math.min(...pa) + 0.5) return true;
    }
  }
  return false;
}
const lines = [];
document.querySelectorAll("svg").forEach((svg, figure) => {
  const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim() !== "");
  const boxes = texts.map(corners);
  for (let i = 0; i < texts.length; i++)
    for (let j = i + 1; j < texts.length; j++)
      if (!separated(boxes[i], boxes[j]))
        lines.push(figure + ": " + JSON.stringify(texts[i].textContent) + " / " + JSON.stringify(texts[j].textContent));
  lines.push(figure + ": " + texts.length + " texts checked");
});
document.getElementById("overlaps").textContent = lines.join("\n");
