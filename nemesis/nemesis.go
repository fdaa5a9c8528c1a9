// Package nemesis injects faults into a running test on a seeded schedule and
// heals them: every injection and heal is recorded in the history.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockbench/lockbench/history"
)

// Fault is one kind of fault. Heal must undo everything Inject did and be
// safe to call at any time, any number of times: it is also how a run that
// ends early (error, Ctrl-C) leaves nothing broken.
type Fault interface {
	Name() string
	// Inject starts the fault and says what it hit. ErrNoTarget means
	// there was nothing to hit this time.
	Inject(ctx context.Context, r *rand.Rand) (Injection, error)
	Heal(ctx context.Context) error
}

// Injection is what one injection did: its shape (e.g. "isolate-leader")
// and the nodes it hit.
type Injection struct {
	Shape   string
	Targets []string
}

// Lasting is a fault that decides how long it lasts (a killed node stays
// down for its restart delay), instead of the schedule.
type Lasting interface {
	Lasts(scheduled time.Duration) time.Duration
}

// Measured is a fault that reads back, just before its heal, what it did
// from inside the cluster (the toxics a link has, the packets a lossy
// link dropped); the heal's invoke event carries it as its shape.
type Measured interface {
	Measure(ctx context.Context) string
}

// Inapplicable is a fault that cannot act on this cluster (a clock jump on
// Go servers); the run records why once and never injects it.
type Inapplicable interface {
	Inapplicable() string
}

// ErrNoTarget means a fault found nothing to act on before its wait ended.
var ErrNoTarget = errors.New("no target")

// Schedule says when faults happen.
type Schedule struct {
	// Interval is the mean quiet time between the end of one fault and the
	// start of the next; each gap is drawn uniformly from [Interval/2, 3*Interval/2].
	Interval time.Duration
	// Duration is how long each fault lasts.
	Duration time.Duration
	// Healthy, when set, waits until the lock service passes again the
	// checks it passed before the workload began, inside its nodes and
	// within the same bound, and says why not when it does not. It is
	// called after each heal of a fault that acts on the service
	// (Kind.Service), and the next fault's gap starts after it: a fault
	// landing on a half-healed cluster would confound the verdict.
	Healthy func(ctx context.Context) error
}

func (s Schedule) gap(r *rand.Rand) time.Duration {
	return s.Interval/2 + time.Duration(r.Int64N(int64(s.Interval)+1))
}

// Recorder stamps and stores a nemesis event.
type Recorder func(history.Event)

// Run injects faults until ctx ends, healing each after the schedule's
// duration. The rng alone decides gaps and which fault comes next, so the
// same seed gives the same schedule.
func Run(ctx context.Context, s Schedule, faults []Fault, r *rand.Rand, record Recorder) error {
	var usable []Fault
	for _, f := range faults {
		if in, ok := f.(Inapplicable); ok && in.Inapplicable() != "" {
			record(history.Event{Process: history.Nemesis, Type: history.Fail, F: history.Start, Fault: f.Name(),
				Error: "skipped: " + in.Inapplicable()})
			continue
		}
		usable = append(usable, f)
	}
	faults = usable
	if len(faults) == 0 {
		<-ctx.Done()
		return nil
	}
	for {
		if !sleep(ctx, s.gap(r)) {
			return nil
		}
		f := faults[r.IntN(len(faults))]
		record(history.Event{Process: history.Nemesis, Type: history.Invoke, F: history.Start, Fault: f.Name()})
		inj, err := f.Inject(ctx, r)
		switch {
		case errors.Is(err, ErrNoTarget) || (err != nil && ctx.Err() != nil):
			record(history.Event{Process: history.Nemesis, Type: history.Fail, F: history.Start, Fault: f.Name(), Error: err.Error()})
			continue
		case err != nil:
			// A half-injected fault is healed before the error is returned.
			heal(f, record)
			return fmt.Errorf("inject %s: %w", f.Name(), err)
		}
		record(history.Event{Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: f.Name(),
			Shape: inj.Shape, Targets: inj.Targets})
		lasts := s.Duration
		if l, ok := f.(Lasting); ok {
			lasts = l.Lasts(lasts)
		}
		sleep(ctx, lasts)
		if err := heal(f, record); err != nil {
			return err
		}
		if s.Healthy != nil && actsOnService(f) {
			awaitHealthy(ctx, s.Healthy, f, inj, record)
		}
	}
}

// RunEndedUnhealthy is the reason of a healthy fail recorded because the
// run ended while the service was awaited.
const RunEndedUnhealthy = "the run ended before the service answered again"

// awaitHealthy records when the service healed of f answers again: a
// healthy info, or a healthy fail with the reason once the wait gave up.
// A run that ends during the wait records a fail too, saying so: the
// service was not seen healthy again, so the fault stays in force to the
// end of the run, as it must for the progress checker not to read an
// outage as a lock no one would release. Recording nothing instead would
// make the history read as one of an older lockbench, whose faults end at
// their heal. The heal itself is done by then.
func awaitHealthy(ctx context.Context, healthy func(context.Context) error, f Fault, inj Injection, record Recorder) {
	e := history.Event{Process: history.Nemesis, Type: history.Info, F: history.Healthy, Fault: f.Name(), Targets: inj.Targets}
	if err := healthy(ctx); err != nil {
		e.Type, e.Error = history.Fail, err.Error()
		if ctx.Err() != nil {
			// Every check was stopped by the run's end, which is then
			// all its error says.
			e.Error = RunEndedUnhealthy
		}
	}
	record(e)
}

// heal runs on a fresh context: the run's may already be cancelled, and a
// fault must be healed regardless.
func heal(f Fault, record Recorder) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen string
	if m, ok := f.(Measured); ok {
		seen = m.Measure(ctx)
	}
	record(history.Event{Process: history.Nemesis, Type: history.Invoke, F: history.Stop, Fault: f.Name(), Shape: seen})
	if err := f.Heal(ctx); err != nil {
		record(history.Event{Process: history.Nemesis, Type: history.Info, F: history.Stop, Fault: f.Name(), Error: err.Error()})
		return fmt.Errorf("heal %s: %w", f.Name(), err)
	}
	record(history.Event{Process: history.Nemesis, Type: history.Info, F: history.Stop, Fault: f.Name()})
	return nil
}

// HealAll heals every fault, whatever state the schedule was in; it returns
// the first error after trying them all.
func HealAll(ctx context.Context, faults []Fault) error {
	var first error
	for _, f := range faults {
		if err := f.Heal(ctx); err != nil && first == nil {
			first = fmt.Errorf("heal %s: %w", f.Name(), err)
		}
	}
	return first
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
