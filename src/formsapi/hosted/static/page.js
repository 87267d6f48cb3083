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

  /* The funnel's start: on the first answer typed or chosen, one beacon
   * with the page's stamp; the hidden _started field then tells the server,
   * on the post, that this respondent's start is counted already. */
  var started = form && form.querySelector("input[name=_started]");
  if (started && form.getAttribute("data-start") && navigator.sendBeacon) {
    var begin = function () {
      if (started.value) return;
      var stamp = form.querySelector("input[name=_stamp]");
      var body = new URLSearchParams();
      if (stamp) body.set("_stamp", stamp.value);
      if (navigator.sendBeacon(form.getAttribute("data-start"), body)) started.value = "1";
    };
    form.addEventListener("input", begin);
    form.addEventListener("change", begin);
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
  /* File questions: each file picked is sent as it is, at once, to the
   * form's upload address; its id goes into the question's hidden field,
   * which the page posts. Sizes are checked here first, and again (with the
   * file's type, by its bytes) by the server. */
  function say(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, name) { return values[name]; });
  }

  // A size as the server's pages write it (Jinja's filesizeformat).
  function sizeText(bytes) {
    if (bytes === 1) return "1 Byte";
    if (bytes < 1000) return bytes + " Bytes";
    var prefixes = ["kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"];
    for (var i = 0; i < prefixes.length; i++) {
      var unit = Math.pow(1000, i + 2);
      if (bytes < unit || i === prefixes.length - 1) {
        return (1000 * bytes / unit).toFixed(1) + " " + prefixes[i];
      }
    }
  }

  // Uploads under way on the page, of every file question: the page's
  // buttons wait for them, and only those this script disabled come back
  // (the current language's stays disabled).
  var inFlight = 0;
  var held = [];
  function sending(delta) {
    inFlight += delta;
    if (inFlight > 0 && !held.length) {
      held = Array.prototype.filter.call(
        form.querySelectorAll("button[type=submit]"),
        function (button) { return !button.disabled; });
      held.forEach(function (button) { button.disabled = true; });
    } else if (inFlight === 0) {
      held.forEach(function (button) { button.disabled = false; });
      held = [];
    }
  }

  function fileQuestion(box) {
    var picker = box.querySelector("input[type=file]");
    var field = box.querySelector("input[type=hidden]");
    var list = box.querySelector("ul.files");
    var status = box.querySelector(".upload-status");
    var maxSize = Number(box.dataset.maxSize);
    var maxFiles = Number(box.dataset.maxFiles);

    function ids() { return field.value ? field.value.split(",") : []; }
    function setIds(values) { field.value = values.join(","); }
    // What the status line says, marked as an error or not.
    function tell(text, failed) {
      status.textContent = text;
      status.classList.toggle("error", Boolean(failed));
    }

    function listed(file) {
      var item = document.createElement("li");
      item.dataset.id = file.id;
      item.textContent = file.name + " (" + sizeText(file.size) + ") ";
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link";
      remove.setAttribute("data-remove", "");
      remove.setAttribute("aria-label", box.dataset.remove + " " + file.name);
      remove.textContent = box.dataset.remove;
      item.appendChild(remove);
      list.appendChild(item);
    }

    function send(file) {
      var values = { name: file.name, size: box.dataset.size, count: maxFiles };
      if (file.size > maxSize) {
        tell(say(box.dataset.tooLarge, values), true);
        return;
      }
      sending(1);
      tell(say(box.dataset.uploading, values));
      var request = new XMLHttpRequest();
      request.open("POST", box.dataset.upload + "&name=" + encodeURIComponent(file.name));
      request.upload.onprogress = function (event) {
        if (event.lengthComputable) {
          tell(say(box.dataset.uploading, values) + " " +
            Math.floor(100 * event.loaded / event.total) + "%");
        }
      };
      request.onload = function () {
        sending(-1);
        var answer = {};
        try { answer = JSON.parse(request.responseText); } catch (e) { /* not JSON */ }
        if (request.status === 201) {
          setIds(ids().concat([answer.id]));
          listed(answer);
          tell(say(box.dataset.uploaded, values));
        } else {
          values.reason = answer.detail || request.statusText;
          tell(say(box.dataset.uploadFailed, values), true);
        }
      };
      request.onerror = function () {
        sending(-1);
        values.reason = request.statusText || "network error";
        tell(say(box.dataset.uploadFailed, values), true);
      };
      request.send(file);
    }

    picker.disabled = false;
    picker.addEventListener("change", function () {
      var files = Array.prototype.slice.call(picker.files);
      if (ids().length + files.length > maxFiles) {
        tell(say(box.dataset.tooMany, { count: maxFiles }), true);
        files = files.slice(0, Math.max(0, maxFiles - ids().length));
      }
      files.forEach(send);
      picker.value = "";
    });
    list.addEventListener("click", function (event) {
      var button = event.target.closest("[data-remove]");
      if (!button) return;
      var item = button.closest("li");
      setIds(ids().filter(function (id) { return id !== item.dataset.id; }));
      item.remove();
      tell("");
      picker.focus();
    });
  }

  document.querySelectorAll("[data-upload]").forEach(fileQuestion);
})();
