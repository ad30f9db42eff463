// Sort the full per-team tables by a click on a column heading (inline, no network).
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th, i) {
    th.tabIndex = 0;
    th.title = "Sort by " + th.textContent;
    var sort = function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var dir = th.getAttribute("data-dir") === "asc" ? -1 : 1;
      th.setAttribute("data-dir", dir > 0 ? "asc" : "desc");
      var key = function (row) {
        var text = row.cells[i].textContent.trim();
        var n = parseFloat(text.replace("\u2212", "-").replace(/[^0-9.\-]/g, ""));
        return isNaN(n) || text.charAt(0) === "<" ? [1, text] : [0, n];
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x[0] !== y[0]) return x[0] - y[0];
        return (x[1] > y[1] ? 1 : x[1] < y[1] ? -1 : 0) * dir;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
  });
});
