import type { ComponentChildren } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";

/** Which sides of a box have content scrolled out of view. */
type Overflow = { left: boolean; right: boolean };

/**
 * A box whose content may be wider than the screen and scrolls sideways
 * inside it. While content is out of view, that side shows a shadow and a
 * line under the box says so ("scroll sideways"): on a phone, nothing else
 * tells that a scrollbar is there (touch scrollbars are hidden until
 * scrolled). `data-overflow` names the sides ("left right", "right", "").
 */
export function ScrollBox({ class: className, label, children }: { class: string; label: string; children: ComponentChildren }) {
  const box = useRef<HTMLDivElement>(null);
  const [overflow, setOverflow] = useState<Overflow>({ left: false, right: false });
  useLayoutEffect(() => {
    const element = box.current;
    if (!element) return;
    const measure = () => {
      // 1 px of slack: fractional widths round either way.
      const left = element.scrollLeft > 1;
      const right = element.scrollLeft + element.clientWidth < element.scrollWidth - 1;
      setOverflow((previous) => (previous.left === left && previous.right === right ? previous : { left, right }));
    };
    measure();
    element.addEventListener("scroll", measure, { passive: true });
    const resized = new ResizeObserver(measure);
    resized.observe(element);
    return () => {
      element.removeEventListener("scroll", measure);
      resized.disconnect();
    };
  }, []);
  const sides = [overflow.left ? "left" : null, overflow.right ? "right" : null].filter(Boolean).join(" ");
  return (
    <div class="scroll-box" data-overflow={sides}>
      <div class="scroll-frame">
        <div ref={box} class={className}>
          {children}
        </div>
      </div>
      {sides !== "" ? (
        <p class="scroll-hint muted" data-testid="scroll-hint">
          {overflow.right ? `${label} is wider than the screen: scroll sideways to see the rest →` : `← scroll back for the start of ${label.toLowerCase()}`}
        </p>
      ) : null}
    </div>
  );
}
