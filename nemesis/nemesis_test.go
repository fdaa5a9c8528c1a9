package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockbench/lockbench/history"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSignals records the signals a fault sends.
type fakeSignals struct {
	mu   sync.Mutex
	sent []string
	fail string // a signal that errors
}

func (f *fakeSignals) Signal(_ context.Context, node, sig string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sig == f.fail {
		return errors.New("engine said no")
	}
	f.sent = append(f.sent, sig+" "+node)
	return nil
}

type fixedHolder string

// Live implements Holders: no client dies in these tests.
func (fixedHolder) Live(clients []string) []string { return clients }

func (fixedHolder) Hits() int { return 0 }

func (fixedHolder) WaitHit(ctx context.Context, _ string, _ int) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

func (h fixedHolder) WaitHolder(ctx context.Context) (string, error) {
	if h == "" {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return string(h), nil
}

func (h fixedHolder) WaitGrant(ctx context.Context) (string, error) { return h.WaitHolder(ctx) }

func record(mu *sync.Mutex, events *[]history.Event) Recorder {
	return func(e history.Event) {
		mu.Lock()
		defer mu.Unlock()
		*events = append(*events, e)
	}
}

func TestPauseHolderInjectsAndHeals(t *testing.T) {
	sig := &fakeSignals{}
	p := &PauseClient{Nodes: sig, Holders: fixedHolder("c3")}
	var mu sync.Mutex
	var events []history.Event
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := Run(ctx, Schedule{Interval: 10 * time.Millisecond, Duration: 20 * time.Millisecond}, []Fault{p}, rand.New(rand.NewPCG(1, 2)), record(&mu, &events)); err != nil {
		t.Fatal(err)
	}
	if len(sig.sent) < 2 || sig.sent[0] != "SIGSTOP c3" || sig.sent[1] != "SIGCONT c3" {
		t.Fatalf("signals = %v", sig.sent)
	}
	if sig.sent[len(sig.sent)-1] != "SIGCONT c3" {
		t.Errorf("run ended with c3 paused: %v", sig.sent)
	}
	var starts, stops int
	for _, e := range events {
		if e.Process != history.Nemesis {
			t.Errorf("event from %q", e.Process)
		}
		if e.Type == history.Info && e.F == history.Start {
			starts++
			if !reflect.DeepEqual(e.Targets, []string{"c3"}) {
				t.Errorf("targets %v", e.Targets)
			}
		}
		if e.Type == history.Info && e.F == history.Stop {
			stops++
		}
	}
	if starts == 0 || starts != stops {
		t.Errorf("%d faults started, %d healed", starts, stops)
	}
}

func TestNoHolderInjectsNothing(t *testing.T) {
	sig := &fakeSignals{}
	p := &PauseClient{Nodes: sig, Holders: fixedHolder("")}
	var mu sync.Mutex
	var events []history.Event
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := Run(ctx, Schedule{Interval: 5 * time.Millisecond, Duration: time.Millisecond}, []Fault{p}, rand.New(rand.NewPCG(1, 2)), record(&mu, &events)); err != nil {
		t.Fatal(err)
	}
	if len(sig.sent) != 0 {
		t.Fatalf("signals with no holder: %v", sig.sent)
	}
	for _, e := range events {
		if e.Type == history.Info && e.F == history.Start {
			t.Errorf("a fault was recorded as started: %+v", e)
		}
	}
}

func TestFailedHealIsReportedAndRetried(t *testing.T) {
	sig := &fakeSignals{fail: "SIGCONT"}
	p := &PauseClient{Nodes: sig, Holders: fixedHolder("c1")}
	if _, err := p.Inject(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := HealAll(context.Background(), []Fault{p}); err == nil {
		t.Fatal("HealAll hid a failed SIGCONT")
	}
	sig.fail = ""
	if err := HealAll(context.Background(), []Fault{p}); err != nil {
		t.Fatal(err)
	}
	if last := sig.sent[len(sig.sent)-1]; last != "SIGCONT c1" {
		t.Fatalf("c1 still paused: %v", sig.sent)
	}
}

// The same seed must give the same schedule: the gaps and the durations.
func TestScheduleIsSeeded(t *testing.T) {
	gaps := func(seed uint64) []time.Duration {
		r := rand.New(rand.NewPCG(seed, 1))
		var out []time.Duration
		s := Schedule{Interval: time.Second}
		for i := 0; i < 5; i++ {
			out = append(out, s.gap(r))
		}
		return out
	}
	a, b, c := gaps(1), gaps(1), gaps(2)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different gaps: %v %v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("different seeds, same gaps: %v", a)
	}
	for _, g := range a {
		if g < 500*time.Millisecond || g > 1500*time.Millisecond {
			t.Errorf("gap %s outside [Interval/2, 3*Interval/2]", g)
		}
	}
}

// A shared server (PostgreSQL) can be cut from every client at once,
// beside the holder alone; other topologies of one node keep their shapes.
func TestPartitionIsolatesASharedServer(t *testing.T) {
	shared := &Partition{Topology: Topology{Service: []string{"postgres"}, Clients: []string{"c1", "c2"}, Shared: true}}
	if got := shared.shapes(); !slices.Equal(got, []string{"client-holder", "isolate-service"}) {
		t.Fatalf("shapes %v", got)
	}
	pairs, sides, err := shared.plan(context.Background(), rand.New(rand.NewPCG(1, 1)), "isolate-service")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pairs, [][2]string{{"postgres", "c1"}, {"postgres", "c2"}}) || !slices.Equal(sides, []string{"postgres", "c1,c2"}) {
		t.Errorf("pairs %v, sides %v", pairs, sides)
	}
	single := &Partition{Topology: Topology{Service: []string{"redis"}, Clients: []string{"c1"}}}
	if got := single.shapes(); !slices.Equal(got, []string{"client-holder"}) {
		t.Errorf("redis shapes %v", got)
	}
}

// namedFault is a fault that hits targets and heals at once; its name
// decides its kind, and with it whether the service is awaited after it.
type namedFault struct {
	name    string
	targets []string
	mu      sync.Mutex
	heals   int
}

func (f *namedFault) Name() string { return f.name }

func (f *namedFault) Inject(context.Context, *rand.Rand) (Injection, error) {
	return Injection{Shape: "some", Targets: f.targets}, nil
}

func (f *namedFault) Heal(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heals++
	return nil
}

// runFor runs the nemesis on faults for d and returns what it recorded.
func runFor(t *testing.T, d time.Duration, s Schedule, faults ...Fault) []history.Event {
	t.Helper()
	var mu sync.Mutex
	var events []history.Event
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := Run(ctx, s, faults, rand.New(rand.NewPCG(1, 2)), record(&mu, &events)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(events)
}

// describe is an event as the tests below compare it.
func describe(e history.Event) string {
	s := e.F + " " + string(e.Type) + " " + e.Fault
	if e.Error != "" {
		s += " !"
	}
	return s
}

// After the heal of a fault on the service's nodes the nemesis waits for
// the service and records healthy, with the fault's targets; the next
// fault's gap starts only after that.
func TestHealthyFollowsEachHealOfAServiceFault(t *testing.T) {
	kill := &namedFault{name: "kill", targets: []string{"z1", "z2"}}
	var mu sync.Mutex
	var waits []time.Time
	s := Schedule{Interval: 20 * time.Millisecond, Duration: time.Millisecond, Healthy: func(ctx context.Context) error {
		mu.Lock()
		waits = append(waits, time.Now())
		mu.Unlock()
		return nil
	}}
	events := runFor(t, 300*time.Millisecond, s, kill)
	var cycle []string
	healthy := 0
	for i, e := range events {
		cycle = append(cycle, describe(e))
		if e.F != history.Healthy {
			continue
		}
		healthy++
		if e.Process != history.Nemesis || e.Type != history.Info || !slices.Equal(e.Targets, kill.targets) {
			t.Errorf("healthy event %+v", e)
		}
		if i == 0 || events[i-1].F != history.Stop || events[i-1].Type != history.Info {
			t.Errorf("healthy at %d does not follow a heal: %v", i, cycle)
		}
	}
	want := []string{"start invoke kill", "start info kill", "stop invoke kill", "stop info kill", "healthy info kill"}
	if len(cycle) < len(want) || !slices.Equal(cycle[:len(want)], want) {
		t.Fatalf("events %v, want cycles of %v", cycle, want)
	}
	if healthy < 2 || healthy != len(waits) || healthy < kill.heals-1 {
		t.Errorf("%d healthy events, %d waits, %d heals", healthy, len(waits), kill.heals)
	}
}

// The same schedule with a service that does not come back records the
// reason; a fault on clients alone is not followed by any wait.
func TestHealthyFailsWithTheReasonAndSkipsClientFaults(t *testing.T) {
	kill := &namedFault{name: "kill", targets: []string{"r1"}}
	pause := &namedFault{name: "pause", targets: []string{"c1"}}
	calls := 0
	s := Schedule{Interval: 10 * time.Millisecond, Duration: time.Millisecond, Healthy: func(context.Context) error {
		calls++
		return errors.New("r1 not ready after 1m0s")
	}}
	for _, e := range runFor(t, 100*time.Millisecond, s, pause) {
		if e.F == history.Healthy {
			t.Fatalf("healthy after a client fault: %+v", e)
		}
	}
	if calls != 0 {
		t.Fatalf("the service was awaited %d times after client faults", calls)
	}
	events := runFor(t, 100*time.Millisecond, s, kill)
	fails := 0
	for i, e := range events {
		if e.F != history.Healthy {
			continue
		}
		// The last wait may have ended with the run: then that is its reason.
		reason := e.Error == "r1 not ready after 1m0s" || i == len(events)-1 && e.Error == RunEndedUnhealthy
		if e.Type != history.Fail || !reason {
			t.Errorf("healthy %+v, want a fail with the reason", e)
		}
		fails++
	}
	if fails < 2 || fails != calls {
		t.Errorf("%d healthy fails for %d waits", fails, calls)
	}
}

// A run that ends while the service is awaited says so in a healthy fail:
// the fault stays in force to the end of the run. The heal came first.
func TestHealthyCutByTheRunsEnd(t *testing.T) {
	kill := &namedFault{name: "kill", targets: []string{"r1"}}
	s := Schedule{Interval: 10 * time.Millisecond, Duration: time.Millisecond, Healthy: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	events := runFor(t, 100*time.Millisecond, s, kill)
	var got []string
	for _, e := range events {
		got = append(got, describe(e))
	}
	want := []string{"start invoke kill", "start info kill", "stop invoke kill", "stop info kill", "healthy fail kill !"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if last := events[len(events)-1]; last.Error != RunEndedUnhealthy {
		t.Errorf("reason %q", last.Error)
	}
}
