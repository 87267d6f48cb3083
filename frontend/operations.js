/* formsapi's operators for json-logic-js, with the meaning the server gives
 * them (src/formsapi/language/logic.py); tests/language/test_logic_parity.py holds
 * the two to the same answers. */
(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory;
  else factory(root.jsonLogic, root);
})(this, function (jsonLogic, root) {
  var fixedToday = null;

  function asDate(value) {
    if (typeof value !== "string" || value.length < 10) return null;
    var text = value.slice(0, 10);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return null;
    var y = +text.slice(0, 4), m = +text.slice(5, 7), d = +text.slice(8, 10);
    if (y < 1) return null;
    var time = Date.UTC(y, m - 1, d);
    var back = new Date(time);
    back.setUTCFullYear(y);
    time = back.getTime();
    if (back.getUTCMonth() !== m - 1 || back.getUTCDate() !== d) return null;
    return time;
  }

  function isoDate(time) {
    var day = new Date(time);
    var y = day.getUTCFullYear();
    if (y < 1 || y > 9999) return null;
    return String(y).padStart(4, "0") + "-" +
      String(day.getUTCMonth() + 1).padStart(2, "0") + "-" +
      String(day.getUTCDate()).padStart(2, "0");
  }

  var DAY = 86400000;
  var TEXT_READ_MAX = 10000; // characters match reads and cat makes (logic.py's TEXT_READ_MAX)

  function cut(text) {
    var chars = Array.from(text);
    return chars.length > TEXT_READ_MAX ? chars.slice(0, TEXT_READ_MAX).join("") : text;
  }
  var operations = {
    length: function (value) {
      if (value === null || value === undefined) return 0;
      if (Array.isArray(value)) return value.length;
      return Array.from(String(value)).length;
    },
    match: function (text, pattern) {
      if (text === null || text === undefined || typeof pattern !== "string") return false;
      try {
        return new RegExp(pattern, "u").test(cut(String(text)));
      } catch (error) {
        return false;
      }
    },
    cat: function () {
      return cut(Array.prototype.join.call(arguments, ""));
    },
    today: function () {
      return fixedToday || new Date().toISOString().slice(0, 10);
    },
    add_days: function (day, days) {
      var start = asDate(day), count = Number(days === undefined ? null : days);
      if (start === null || !isFinite(count)) return null;
      return isoDate(start + Math.trunc(count) * DAY);
    },
    days_between: function (first, second) {
      var a = asDate(first), b = asDate(second);
      return a === null || b === null ? null : Math.round((b - a) / DAY);
    },
  };
  Object.keys(operations).forEach(function (name) {
    jsonLogic.add_operation(name, operations[name]);
  });
  var api = { setToday: function (day) { fixedToday = day; } };
  if (root) root.formsapiLogic = api;
  return api;
});
