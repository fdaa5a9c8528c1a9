package runner

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/lockbench/lockbench/history"
)

// status is the live view of a run, fed by its events: on a terminal one
// line redrawn in place, elsewhere (CI logs) a plain line every few seconds.
type status struct {
	out   io.Writer
	tty   bool
	limit time.Duration
	began time.Time

	mu                 sync.Mutex
	ops, holds, faults int64
	fault              string
	drawn              bool
	stale              staleWrites
}

// staleWrites counts, in time order, writes the store certainly accepted
// after it had accepted a newer token: the write was sent after another
// client's write with a newer token had been acknowledged. Events arrive
// in each client's order but not in time order across clients (a client's
// stream may lag, a frozen client says nothing), and counting them as they
// arrive raises alarms the checkers never confirm. So writes wait in
// pending until every client's record has reached their time.
type staleWrites struct {
	last    map[string]int64 // per client, the time of its latest event
	pending []history.Event  // client writes not yet past every client's time
	// newest is the newest token of an acknowledged write so far in time
	// order; sentAfter is, per client, newest when its open write was sent.
	newest    int64
	sentAfter map[string]int64
	judged    int64 // acknowledged writes counted so far
	count     int64
	// first is the ok of the first write counted stale, once count > 0:
	// what --stop-at-first-anomaly stops at.
	first history.Event
}

func (w *staleWrites) observe(e history.Event) {
	if _, ok := w.last[e.Process]; !ok {
		return
	}
	w.last[e.Process] = e.Time
	if e.F == history.Write && (e.Type == history.Invoke || e.Type == history.OK) {
		w.pending = append(w.pending, e)
	}
}

// advance counts the pending writes that every client's record has passed;
// at the end of the run (all true) it counts them all.
func (w *staleWrites) advance(all bool) {
	horizon := int64(math.MaxInt64)
	if !all {
		for _, t := range w.last {
			horizon = min(horizon, t)
		}
	}
	// Stable: a client's own events keep their order at equal times.
	slices.SortStableFunc(w.pending, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	n := 0
	for ; n < len(w.pending) && w.pending[n].Time <= horizon; n++ {
		e := w.pending[n]
		switch {
		case e.Type == history.Invoke:
			w.sentAfter[e.Process] = w.newest
		case e.Token > 0:
			w.judged++
			if e.Token < w.sentAfter[e.Process] {
				if w.count == 0 {
					w.first = e
				}
				w.count++
			}
			w.newest = max(w.newest, e.Token)
		}
	}
	w.pending = slices.Delete(w.pending, 0, n)
}

func newStatus(out io.Writer, limit time.Duration) *status {
	f, ok := out.(*os.File)
	return &status{out: out, tty: ok && term.IsTerminal(int(f.Fd())), limit: limit, began: time.Now()}
}

// start marks the workload's start, from which elapsed time counts.
func (s *status) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.began = time.Now()
}

// watch names the clients whose records the stale-write count waits for,
// before they start.
func (s *status) watch(clients []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stale = staleWrites{last: map[string]int64{}, sentAfter: map[string]int64{}}
	for _, c := range clients {
		s.stale.last[c] = 0
	}
}

// every is how often the status is printed.
func (s *status) every() time.Duration {
	if s.tty {
		return 250 * time.Millisecond
	}
	return 5 * time.Second
}

// observe counts an event as it arrives, and hands client writes to the
// stale-write count, which takes them in time order. A write the store
// accepted after a newer token's write is the run's first sign of trouble,
// before any checker has run; what it cost is the checkers' call.
func (s *status) observe(e history.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Start:
		s.faults++
		s.fault = e.Fault + " " + strings.Join(e.Targets, ",")
	case e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Stop:
		s.fault = ""
	case e.Type == history.Invoke:
		s.ops++
	case e.F == history.Acquire && e.Type == history.OK:
		s.holds++
	}
	s.stale.observe(e)
}

// say prints a line of its own, above the live line on a terminal.
func (s *status) say(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	fmt.Fprintf(s.out, format+"\n", a...)
}

func (s *status) clear() {
	if s.tty && s.drawn {
		fmt.Fprint(s.out, "\r\033[K")
		s.drawn = false
	}
}

// draw prints the current status.
func (s *status) draw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	fault := s.fault
	if fault == "" {
		fault = "none"
	}
	s.stale.advance(false)
	line := fmt.Sprintf("  %4.0fs/%s  ops %d  holds %d  faults %d (now: %s)  stale writes %d of %d",
		time.Since(s.began).Seconds(), s.limit, s.ops, s.holds, s.faults, fault, s.stale.count, s.stale.judged)
	if s.tty {
		s.clear()
		fmt.Fprint(s.out, line)
		s.drawn = true
		return
	}
	fmt.Fprintln(s.out, line)
}

// firstStale counts the writes every client's record has passed, as the
// status line does, and returns the first of them found stale, if any.
func (s *status) firstStale() (history.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stale.advance(false)
	return s.stale.first, s.stale.count > 0
}

// done ends the live line.
func (s *status) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
}
