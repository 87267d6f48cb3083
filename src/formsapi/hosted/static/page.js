/* The hosted page with script on: blocks shown and hidden as the respondent
 * answers, with the rules the server will apply on the post (logic.js is
 * json-logic-js with formsapi's operators), and long dropdowns searchable.
 * Without it the page works the same, one post at a time. */
(function () {
  "use strict";
  var form = document.querySelector("form[method=post]");
  var spec = document.getElementById("form-logic");

  function answer(data, key, kind, values) {
    var given = values.filter(function (value) { return value !== ""; });
    if (!given.length) return;
    var value;
    if (kind === "list") value = given;
    else if (kind === "number") value = isNaN(Number(given[0])) ? given[0] : Number(given[0]);
    else value = given[0];
    var dot = key.indexOf(".");
    if (dot < 0) data[key] = value;
    else {  // a matrix's row: rules read it as question.row
      var head = key.slice(0, dot);
      data[head] = data[head] || {};
      data[head][key.slice(dot + 1)] = value;
    }
  }

  function apply(live) {
    var data = JSON.parse(JSON.stringify(live.carried));
    var posted = new FormData(form);
    live.blocks.forEach(function (block) {
      var element = form.querySelector('[data-position="' + block.position + '"]');
      if (!element) return;
      var shown = true;
      if (block.visibleIf !== null && block.visibleIf !== undefined) {
        shown = jsonLogic.truthy(jsonLogic.apply(block.visibleIf, data));
        element.hidden = !shown;
        element.querySelectorAll("input, select, textarea").forEach(function (field) {
          field.disabled = !shown;  // a hidden block's answers are not sent
        });
      }
      if (shown && !element.hidden) {
        block.keys.forEach(function (pair) {
          answer(data, pair[0], pair[1], posted.getAll(pair[0]).map(String));
        });
      }
    });
  }

  if (form && spec && window.jsonLogic) {
    var live = JSON.parse(spec.textContent);
    var update = function () { apply(live); };
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    update();
  }

  document.querySelectorAll("select[data-search]").forEach(function (select) {
    var search = document.createElement("input");
    search.type = "search";
    search.className = "search";
    search.setAttribute("aria-label", "Search " + select.getAttribute("data-search"));
    search.placeholder = "Type to search";
    search.addEventListener("input", function () {
      var query = search.value.trim().toLowerCase();
      Array.prototype.forEach.call(select.options, function (option, index) {
        option.hidden = index > 0 && query !== "" &&
          option.text.toLowerCase().indexOf(query) < 0;
      });
    });
    select.parentNode.insertBefore(search, select);
  });
})();
