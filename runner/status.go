package runner

import (
	"fmt"
	"io"
	"os"
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

	mu                             sync.Mutex
	ops, holds, faults, superseded int64
	maxToken                       int64
	fault                          string
	drawn                          bool
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

// every is how often the status is printed.
func (s *status) every() time.Duration {
	if s.tty {
		return 250 * time.Millisecond
	}
	return 5 * time.Second
}

// observe counts an event. A write acknowledged with a token older than one
// already granted comes from a holder that has been superseded: two clients
// held the lock. It is the run's first sign of trouble, before any checker
// has run; whether the store lost an update by it is the checkers' call.
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
		s.maxToken = max(s.maxToken, e.Token)
	case e.F == history.Write && e.Type == history.OK && e.Token > 0 && e.Token < s.maxToken:
		s.superseded++
	}
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
	line := fmt.Sprintf("  %4.0fs/%s  ops %d  holds %d  faults %d (now: %s)  superseded writes %d",
		time.Since(s.began).Seconds(), s.limit, s.ops, s.holds, s.faults, fault, s.superseded)
	if s.tty {
		s.clear()
		fmt.Fprint(s.out, line)
		s.drawn = true
		return
	}
	fmt.Fprintln(s.out, line)
}

// done ends the live line.
func (s *status) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
}
