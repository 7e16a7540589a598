// Draws one plotly chart per metric from the embedded data; sets window.rundiffReady when done.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rundiff-data").textContent);
  function hexToRgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + ((n >> 16) & 255) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }
  function traceFor(t) {
    var base = { x: t.x, y: t.y, name: t.name, type: "scatter", mode: "lines",
                 legendgroup: t.arm || "points", connectgaps: false };
    var width = t.role === "student" ? 3 : 2;
    switch (t.kind) {
      case "raw":
        base.line = { color: t.color, width: 1 }; base.opacity = 0.3; base.showlegend = false;
        base.hoverinfo = "skip"; break;
      case "band_lower":
        base.line = { color: t.color, width: 0 }; base.showlegend = false; base.hoverinfo = "skip"; break;
      case "band_upper":
        base.line = { color: t.color, width: 0 }; base.fill = "tonexty";
        base.fillcolor = hexToRgba(t.color, 0.18); base.showlegend = false; base.hoverinfo = "skip"; break;
      case "points":
        base.mode = "markers"; base.marker = { color: t.color, size: 9, symbol: "diamond-open", line: { width: 2 } };
        base.text = t.hover; base.hovertemplate = "%{text}<extra></extra>"; break;
      default:
        base.line = { color: t.color, width: width };
        if (t.hover && t.hover.length) { base.text = t.hover; }
    }
    return base;
  }
  var pending = data.figures.map(function (fig, i) {
    var el = document.getElementById("plot-" + i);
    var layout = {
      title: { text: fig.metric + " (" + fig.group + ", " + (fig.goal ? "goal: " + fig.goal : "direction unknown") + ")", font: { size: 14 } },
      xaxis: { title: { text: fig.x_label } },
      yaxis: { title: { text: fig.metric } },
      margin: { l: 60, r: 20, t: 40, b: 45 },
      legend: { orientation: "h", y: -0.2 },
      shapes: [],
      annotations: []
    };
    if (fig.marker_x !== null) {
      layout.shapes.push({ type: "line", xref: "x", yref: "paper", x0: fig.marker_x, x1: fig.marker_x,
                           y0: 0, y1: 1, line: { color: "#111", width: 1.5, dash: "dash" } });
      layout.annotations.push({ x: fig.marker_x, xref: "x", y: 1, yref: "paper", text: fig.marker_label,
                                showarrow: false, yanchor: "bottom", font: { size: 11 } });
    }
    return Plotly.newPlot(el, fig.traces.map(traceFor), layout,
                          { displaylogo: false, responsive: true, showLink: false,
                            showSendToCloud: false, showEditInChartStudio: false });
  });
  Promise.all(pending).then(function () { window.rundiffReady = true; },
                            function (err) { console.error("rundiff plot failed: " + err); });
})();
