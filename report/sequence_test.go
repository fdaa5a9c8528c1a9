package report

import (
	"strings"
	"testing"
)

func TestParseSequence(t *testing.T) {
	d, err := parseSequence(`sequenceDiagram
    participant c3
    participant lock as lock service
    participant store
    c3->>lock: acquire
    lock-->>c3: token 46
    Note over c3: paused by the nemesis at 5.663 s for 4.0 s
    c3->>store: write 46 with token 46
    Note over c3,store: stale-write-accepted`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.ids, " ") != "c3 lock store" || d.labels["lock"] != "lock service" || len(d.items) != 5 {
		t.Fatalf("parsed %+v", d)
	}
	if it := d.items[1]; it.from != "lock" || it.to != "c3" || !it.dashed || !it.head || it.text != "token 46" {
		t.Errorf("reply: %+v", it)
	}
	if it := d.items[4]; !it.note || it.from != "c3" || it.to != "store" {
		t.Errorf("note: %+v", it)
	}
	svg := d.svg(1)
	if n := strings.Count(svg, `class="participant"`); n != 6 {
		t.Errorf("%d participant boxes, want 3 at the top and 3 at the bottom", n)
	}
	if n := strings.Count(svg, `class="message"`); n != 3 || strings.Count(svg, `class="note"`) != 2 {
		t.Errorf("%d messages, want 3, and 2 notes", n)
	}
	if !strings.Contains(svg, `marker-end="url(#seq-arrow-1)"`) || !strings.Contains(svg, `stroke-dasharray="5 3"`) {
		t.Error("arrows or dashed replies missing")
	}
}

// What the renderer does not know is refused, not dropped.
func TestParseSequenceRefuses(t *testing.T) {
	for _, src := range []string{
		"graph TD\n  a --> b",
		"sequenceDiagram\n  loop every second\n  a->>b: x\n  end",
		"sequenceDiagram\n  a->>b without text",
		"sequenceDiagram\n  Note a: nowhere",
	} {
		if _, err := parseSequence(src); err == nil {
			t.Errorf("accepted %q", src)
		}
	}
}
