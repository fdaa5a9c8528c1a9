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
