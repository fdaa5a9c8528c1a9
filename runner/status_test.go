package runner

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

func TestStatusCountsAndFlagsStaleWrites(t *testing.T) {
	var out bytes.Buffer
	s := newStatus(&out, 20*time.Second)
	if s.tty || s.every() != 5*time.Second {
		t.Fatal("a buffer is not a terminal: plain lines every 5 s expected")
	}
	for _, e := range []history.Event{
		{Process: "c1", Type: history.Invoke, F: history.Acquire},
		{Process: "c1", Type: history.OK, F: history.Acquire, Token: 33},
		{Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: "pause", Targets: []string{"c1"}},
		{Process: "c2", Type: history.OK, F: history.Acquire, Token: 34},
		{Process: "c1", Type: history.Invoke, F: history.Write, Token: 33},
		{Process: "c1", Type: history.OK, F: history.Write, Token: 33},
	} {
		s.observe(e)
	}
	s.draw()
	line := out.String()
	for _, want := range []string{"ops 2", "holds 2", "faults 1 (now: pause c1)", "superseded writes 1"} {
		if !strings.Contains(line, want) {
			t.Errorf("status %q lacks %q", line, want)
		}
	}
	s.observe(history.Event{Process: history.Nemesis, Type: history.Info, F: history.Stop, Fault: "pause"})
	out.Reset()
	s.draw()
	if !strings.Contains(out.String(), "(now: none)") {
		t.Errorf("healed fault still shown: %q", out.String())
	}
}
