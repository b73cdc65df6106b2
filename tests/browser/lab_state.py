"""What a gradient lab holds and shows, as JSON: its controls (kind, value, whether disabled,
the changes the page can make) and the text of each view. The browser test's barrier cell
prints it from the page's own kernel, so the test compares the page with the kernel that
drives it, after each change. Runs in the kernel: widgets and the standard library only."""

from __future__ import annotations

import html.parser


class _Text(html.parser.HTMLParser):
    """The text a browser shows for simple HTML: cells and blocks apart, inline runs joined."""

    BLOCKS = {"td", "th", "tr", "p", "div", "br", "table", "li"}

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.parts.append(" " if tag in self.BLOCKS else "")

    def handle_endtag(self, tag):
        self.parts.append(" " if tag in self.BLOCKS else "")

    def handle_data(self, data):
        self.parts.append(data)


def squeeze(text: str) -> str:
    return " ".join(text.split())


def html_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    return squeeze("".join(parser.parts))


def widget_text(widget) -> str:
    """What the page shows for an HTML or an Output widget (a picture shows no text)."""
    if hasattr(widget, "outputs"):
        texts = []
        for output in widget.outputs:
            data = output.get("data", {})
            if "text/html" in data:
                texts.append(html_text(data["text/html"]))
            elif "text/plain" in data and not any(k.startswith("image/") for k in data):
                texts.append(squeeze(data["text/plain"]))
            elif "text" in output:
                texts.append(squeeze(output["text"]))
        return " ".join(texts)
    return html_text(widget.value)


def lab_parts(lab) -> tuple[dict, dict]:
    """The lab's controls and the views that show its result, by name. Every one carries the
    CSS class ``gradient-lab-<name>`` on the page."""
    controls = dict(lab.controls)
    views, stack = {}, [lab.widget]
    while stack:
        widget = stack.pop()
        stack.extend(getattr(widget, "children", ()))
        for css in getattr(widget, "_dom_classes", ()):
            name = css.removeprefix("gradient-lab-")
            if css.startswith("gradient-lab-") and name not in controls:
                views[name] = widget
    return controls, views


def moves(control) -> list[tuple[tuple[str, object], object]]:
    """Each change the page can make to this control, as (what to do on the page, the value
    the control then holds); the first moves away from the current value."""
    kind = type(control).__name__
    if kind in ("Dropdown", "ToggleButtons", "RadioButtons"):
        labels, index = control._options_labels, control.index
        return [
            (("choose", labels[i]), control._options_values[i])
            for i in [*range(index + 1, len(labels)), *range(index)]
        ]
    if kind == "SelectionSlider":
        values, index = control._options_values, control.index
        return [
            (("key", key), values[index + step])
            for key, step in (("ArrowRight", 1), ("ArrowLeft", -1))
            if 0 <= index + step < len(values)
        ]
    if kind in ("IntSlider", "FloatSlider"):
        value, step = control.value, control.step
        return [
            (("key", key), value + sign * step)
            for key, sign in (("ArrowRight", 1), ("ArrowLeft", -1))
            if control.min <= value + sign * step <= control.max
        ]
    if kind in ("Checkbox", "ToggleButton"):
        return [(("click", None), not control.value)]
    raise NotImplementedError(f"the browser test cannot drive a {kind} yet: add it to moves()")


def lab_state(lab) -> dict:
    """The lab's controls and views as JSON-ready data; values as their ``repr`` (and as the
    summary line writes them, ``str``)."""
    controls, views = lab_parts(lab)
    return {
        "controls": {
            name: {
                "kind": type(control).__name__,
                "value": repr(control.value),
                "disabled": bool(control.disabled),
                "labels": list(getattr(control, "_options_labels", ())),
                "moves": [
                    [list(action), repr(value), str(value)] for action, value in moves(control)
                ],
            }
            for name, control in controls.items()
        },
        "views": {name: widget_text(view) for name, view in views.items()},
    }
