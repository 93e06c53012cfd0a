// jsdom lacks DragEvent, which @lumino/dragdrop (under @lumino/widgets) extends on load.
if (typeof globalThis.DragEvent === 'undefined') {
  globalThis.DragEvent = class DragEvent extends MouseEvent {};
}
