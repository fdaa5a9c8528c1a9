package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/clusters"
)

func TestHitLine(t *testing.T) {
	for _, p := range []string{"acquired", "before-delete", `a "quoted" point`} {
		got, ok := ParseHit([]byte(HitLine(p)))
		if !ok || got != p {
			t.Errorf("%q: parsed %q, %v", p, got, ok)
		}
	}
	for _, line := range []string{`{"index":1,"process":"c1"}`, `{"failpoint":acquired}`, "failpoint acquired"} {
		if p, ok := ParseHit([]byte(line)); ok {
			t.Errorf("%q parsed as a hit at %q", line, p)
		}
	}
}

// armCluster is a cluster whose clients keep their failpoint files in
// memory: arming writes the point, a client "reaches" it when the test says
// so, and every exec and signal is recorded.
type armCluster struct {
	fakeSignals
	mu    sync.Mutex
	execs []string
	armed map[string]string
	hit   map[string]string
	// stopped are nodes whose container is no longer running.
	stopped []string
}

func (c *armCluster) Exec(_ context.Context, node string, cmd ...string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Contains(c.stopped, node) {
		return "", fmt.Errorf("exec in %s: %w", node, clusters.ErrNotRunning)
	}
	line := strings.Join(cmd, " ")
	c.execs = append(c.execs, node+": "+line)
	switch {
	case strings.Contains(line, "> "+armedFile):
		c.armed[node] = strings.Fields(line)[len(strings.Fields(line))-3]
	case cmd[0] == "cat":
		return c.hit[node], nil
	case cmd[0] == "rm":
		delete(c.armed, node)
		delete(c.hit, node)
	}
	return "", nil
}

func (c *armCluster) Pause(context.Context, string) error   { return nil }
func (c *armCluster) Unpause(context.Context, string) error { return nil }
func (c *armCluster) Restart(context.Context, string) error { return nil }
func (c *armCluster) IP(context.Context, string) (string, error) {
	return "", nil
}

// hitHolders reports that one client reached the armed point.
type hitHolders struct {
	c      *armCluster
	client string
	dead   []string
}

func (h *hitHolders) WaitHolder(context.Context) (string, error) { return h.client, nil }

// WaitGrant is never asked for: no fault of these tests waits for a grant.
func (h *hitHolders) WaitGrant(context.Context) (string, error) { return h.client, nil }
func (h *hitHolders) Live(clients []string) []string {
	return slices.DeleteFunc(slices.Clone(clients), func(c string) bool { return slices.Contains(h.dead, c) })
}
func (h *hitHolders) Hits() int { return 0 }
func (h *hitHolders) WaitHit(ctx context.Context, point string, _ int) (string, error) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if h.c.armed[h.client] != point {
		return "", context.DeadlineExceeded
	}
	h.c.hit[h.client] = point
	return h.client, nil
}

// kill-client at a failpoint arms every live client, kills the one that
// reached the point, disarms the others at once, and records the point as
// its shape; its heal has nothing left to disarm.
func TestKillClientAtFailpoint(t *testing.T) {
	c := &armCluster{armed: map[string]string{}, hit: map[string]string{}}
	h := &hitHolders{c: c, client: "c2", dead: []string{"c4"}}
	k := &KillClient{Cluster: c, Holders: h, Clients: []string{"c1", "c2", "c3", "c4"}, Failpoint: "acquired"}
	inj, err := k.Inject(context.Background(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if inj.Shape != "failpoint acquired" || !slices.Equal(inj.Targets, []string{"c2"}) {
		t.Errorf("injection %+v", inj)
	}
	if !slices.Equal(c.sent, []string{"SIGKILL c2"}) {
		t.Errorf("signals %v, want SIGKILL c2", c.sent)
	}
	for _, n := range []string{"c1", "c3"} {
		if _, armed := c.armed[n]; armed {
			t.Errorf("%s still armed after the strike", n)
		}
	}
	if slices.ContainsFunc(c.execs, func(e string) bool { return strings.HasPrefix(e, "c4:") }) {
		t.Errorf("the dead client c4 was armed: %v", c.execs)
	}
	if k.Lasts(time.Minute) != 0 {
		t.Error("a kill lasts")
	}
	// c2's container has stopped, and the run has not yet seen it die:
	// there is nothing left to disarm in it, and the heal says so by
	// succeeding.
	c.stopped = []string{"c2"}
	if err := k.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// slow-release holds the holder at before-delete until the heal disarms
// it, and sends no signal.
func TestSlowRelease(t *testing.T) {
	c := &armCluster{armed: map[string]string{}, hit: map[string]string{}}
	h := &hitHolders{c: c, client: "c1"}
	f := slowReleaseKind.New(context.Background(), Env{Cluster: c, Holders: h, Topology: Topology{Clients: []string{"c1", "c2"}}})
	inj, err := f.Inject(context.Background(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if inj.Shape != "delayed before-delete" || !slices.Equal(inj.Targets, []string{"c1"}) || len(c.sent) != 0 {
		t.Errorf("injection %+v, signals %v", inj, c.sent)
	}
	if c.armed["c1"] != "before-delete" {
		t.Fatalf("c1 not held at before-delete: %v", c.armed)
	}
	for range 2 {
		if err := f.Heal(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.armed) != 0 {
		t.Errorf("still armed after the heal: %v", c.armed)
	}
	if why := slowReleaseKind.Needs(Topology{}); !strings.Contains(why, "no release to delay") {
		t.Errorf("slow-release on a lockless backend: %q", why)
	}
}

// reply-lost strikes the first client to hold a reply at reply-held and
// lets it go on at once, disarmed, with no signal: the client itself drops
// the reply. It lasts nothing, and its heal is safe to repeat.
func TestReplyLost(t *testing.T) {
	c := &armCluster{armed: map[string]string{}, hit: map[string]string{}}
	h := &hitHolders{c: c, client: "c2"}
	f := replyLostKind.New(context.Background(), Env{Cluster: c, Holders: h, Topology: Topology{Clients: []string{"c1", "c2"}}})
	inj, err := f.Inject(context.Background(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if inj.Shape != "failpoint reply-held" || !slices.Equal(inj.Targets, []string{"c2"}) || len(c.sent) != 0 {
		t.Errorf("injection %+v, signals %v", inj, c.sent)
	}
	if !slices.Contains(c.execs, "c2: cat "+hitFile) {
		t.Errorf("the hit was not read back from c2's container: %v", c.execs)
	}
	if len(c.armed) != 0 {
		t.Errorf("still armed after the strike, so the client still holds its reply: %v", c.armed)
	}
	if l, ok := f.(Lasting); !ok || l.Lasts(time.Minute) != 0 {
		t.Error("a lost reply lasts")
	}
	for range 2 {
		if err := f.Heal(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if replyLostKind.Point != "reply-held" || !ArmsPoints([]string{"pause", ReplyLost}) || ArmsPoints([]string{"pause", "kill"}) {
		t.Errorf("reply-lost's point %q, or ArmsPoints, is wrong", replyLostKind.Point)
	}
}
