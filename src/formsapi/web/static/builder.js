// Drag and drop for the builder's block list: a block dropped before
// another posts the new order (the page's hidden #reorder form). Without
// script, or from the keyboard, the Up and Down buttons do the same.
(function () {
  const list = document.getElementById("builder-blocks");
  const form = document.getElementById("reorder");
  if (!list || !form) return;
  let dragged = null;
  const items = () => Array.from(list.querySelectorAll("li[data-index]"));
  for (const item of items()) {
    const handle = item.querySelector(".handle");
    if (!handle) continue;
    handle.addEventListener("mousedown", () => { item.draggable = true; });
    item.addEventListener("dragstart", (event) => {
      dragged = item;
      item.classList.add("dragging");
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", item.dataset.index);
    });
    item.addEventListener("dragend", () => {
      item.classList.remove("dragging");
      item.draggable = false;
      for (const other of items()) other.classList.remove("drop-before");
    });
    item.addEventListener("dragover", (event) => {
      if (!dragged || dragged === item) return;
      event.preventDefault();
      for (const other of items()) other.classList.toggle("drop-before", other === item);
    });
    item.addEventListener("drop", (event) => {
      event.preventDefault();
      if (!dragged || dragged === item) return;
      const box = item.getBoundingClientRect();
      const after = event.clientY > box.top + box.height / 2;
      list.insertBefore(dragged, after ? item.nextSibling : item);
      form.elements.order.value = items().map((li) => li.dataset.index).join(",");
      form.submit();
    });
  }
})();
