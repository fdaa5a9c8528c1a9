package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

// A killed client holds nothing and is no longer live; a failpoint hit is
// found only among the hits after the count a waiter started from.
func TestHoldersKillsAndHits(t *testing.T) {
	h := newHolders(false)
	h.observe(history.Event{Process: "c1", Type: history.OK, F: history.Acquire})
	h.hit("c3", "acquired")
	after := h.Hits()
	h.observeNemesis(history.Event{Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: history.KillClient, Targets: []string{"c1"}})
	if live := h.Live([]string{"c1", "c2", "c3"}); !slices.Equal(live, []string{"c2", "c3"}) {
		t.Errorf("live %v, want c2 c3", live)
	}
	// A dead client's late events do not make it a holder again.
	h.observe(history.Event{Process: "c1", Type: history.OK, F: history.Acquire})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if c, err := h.WaitHolder(ctx); err == nil {
		t.Errorf("the killed c1 still holds: %s", c)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		h.hit("c2", "before-delete")
		h.hit("c2", "acquired")
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	if c, err := h.WaitHit(ctx2, "acquired", after); err != nil || c != "c2" {
		t.Errorf("WaitHit: %q, %v; want c2 (c3's hit came before the wait began)", c, err)
	}
}
