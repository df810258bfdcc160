// Live preview for the Dice form: as the author types, post the form to the preview endpoint and swap in
// the problems and chance strips it sends back. Everything works without this script; it only saves a click.
(function () {
  "use strict";
  // The world form: a variable row shows the fields of its kind (without scripts, Check shows them).
  function showKind(picker) {
    var row = picker.closest(".variable");
    if (!row) {
      return;
    }
    row.setAttribute("data-kind", picker.value);
    row.querySelectorAll("[data-for]").forEach(function (part) {
      part.hidden = part.getAttribute("data-for").split(" ").indexOf(picker.value) < 0;
    });
  }
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("select[data-kind-picker]")) {
      showKind(event.target);
    }
  });
})();

(function () {
  "use strict";
  var form = document.querySelector("form[data-preview]");
  if (!form || !window.fetch || !window.FormData) {
    return;
  }
  var timer = null;
  var sent = 0;
  var shown = 0;

  function showTargets() {
    // A target only means something for over/under checks; show its field as the comparison changes.
    form.querySelectorAll("select[name$='-compare']").forEach(function (select) {
      var prefix = select.name.slice(0, -"compare".length);
      var target = form.querySelector("input[name='" + prefix + "target']");
      if (target && target.parentElement) {
        target.parentElement.hidden = select.value === "absolute";
      }
    });
  }

  function showHits() {
    // Hit only means something for a successes check; an empty one is hidden for a total check.
    form.querySelectorAll("select[name$='-reading']").forEach(function (select) {
      var prefix = select.name.slice(0, -"reading".length);
      var hit = form.querySelector("input[name='" + prefix + "hit']");
      if (hit && hit.parentElement) {
        hit.parentElement.hidden = select.value !== "successes" && hit.value.trim() === "";
      }
    });
  }

  function markInvalid() {
    form.querySelectorAll("[aria-invalid]").forEach(function (field) {
      field.removeAttribute("aria-invalid");
    });
    document.querySelectorAll("li.error[data-field]").forEach(function (item) {
      var field = form.querySelector("[name='" + item.getAttribute("data-field") + "']");
      if (field) {
        field.setAttribute("aria-invalid", "true");
      }
    });
  }

  function swap(html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    template.content.querySelectorAll("[data-slot][id]").forEach(function (fresh) {
      var old = document.getElementById(fresh.id);
      // Only replace what changed, so a focused picker is not pulled from under the author.
      if (old && old.outerHTML !== fresh.outerHTML) {
        old.replaceWith(fresh);
      }
    });
    markInvalid();
  }

  function send() {
    var number = ++sent;
    var body = new URLSearchParams(new FormData(form));
    fetch(form.getAttribute("data-preview"), {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" }
    }).then(function (response) {
      return response.ok ? response.text() : null;
    }).then(function (html) {
      if (html !== null && number > shown) {
        shown = number;
        swap(html);
      }
    }).catch(function () {
      // No preview this time; the Check button still works.
    });
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(send, 250);
  }

  form.addEventListener("input", later);
  form.addEventListener("change", function () {
    showTargets();
    showHits();
    later();
  });
  form.setAttribute("data-live", "true");
})();
