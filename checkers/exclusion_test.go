package checkers

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// redisLease and the others are the leases of the golden exclusion
// histories: a 2 s TTL, as the harness runs by default.
var (
	// The lease models of Redis (whole milliseconds, a wall clock slewed by
	// up to 500 ppm), Redlock (drift factor 0.01) and etcd (a session's
	// lease), as the backends supply them.
	redisLease   = Lease{TTL: 2e9, SlackFixed: 1e6, SlackPPM: 500}
	redlockLease = Lease{TTL: 2e9, SlackFixed: 1e6, SlackPPM: 10_000}
	etcdLease    = Lease{TTL: 2e9, Session: true}
	zkLease      = Lease{TTL: 2e9, SlackPPM: 500_000, Session: true}
	// PostgreSQL's advisory lock has no TTL: a holding is certain up to
	// the send of the last statement that succeeded on its session.
	pgLease = Lease{TTL: 2e9, LastStatement: true}
	noLease = Lease{None: "cas takes no lock: each write is conditional on the version read"}
)

func checkExclusion(t *testing.T, name string, l Lease) Result {
	t.Helper()
	in := load(t, name)
	in.Lease = l
	return Exclusion{}.Check(in)
}

func window(t *testing.T, r Result, kind string) Window {
	t.Helper()
	for _, w := range r.Windows {
		if w.Kind == kind {
			return w
		}
	}
	t.Fatalf("no %s window in %+v", kind, r.Windows)
	return Window{}
}

func wantWindow(t *testing.T, w Window, from, to int64) {
	t.Helper()
	if w.From != from || w.To != to {
		t.Errorf("%s window = [%d, %d), want [%d, %d)", w.Kind, w.From, w.To, from, to)
	}
}

func TestExclusionGolden(t *testing.T) {
	tests := []struct {
		name  string
		lease Lease
		model string
		want  Verdict
		// others are the data checkers' verdicts: exclusion is judged apart
		// from what happened to the data.
		others   map[string]Verdict
		evidence func(t *testing.T, r Result)
	}{
		{
			// c1 and c2 are granted the lock 2 ms apart under a 2 s TTL and
			// both hold it; their writes happen not to collide.
			name: "two-holders", lease: redisLease, model: "redis", want: Invalid,
			others: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "proven": 2, "two_holders": 1, "stale_beliefs": 0})
				a := anomaly(t, r, "two-holders")
				wantSame(t, "clients", a.Clients, []string{"c1", "c2"})
				wantSame(t, "tokens", a.Tokens, []int64{33, 34})
				// c1's grant, c2's grant, c1's release invocation.
				wantSame(t, "events", a.Events, []int64{2, 3, 8})
				wantMentions(t, a, "c2 (token 34) was granted the lock at 1.002 s", "c1 (token 33), granted at 1.000 s",
					"certainly valid until 1.050 s", "from 1.002 s to 1.050 s (48.0 ms)")
				wantWindow(t, window(t, r, "two-holders"), 1002e6, 1050e6)
			},
		},
		{
			// c1 renews at 1.666 s and is paused for 4 s; its lease is proven
			// to 1.666 + 2 − 0.002 s; c2 is granted at 3.700 s; c1's late
			// write is rejected by the fence.
			name: "paused-holder", lease: redisLease, model: "redis", want: Valid,
			others: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"two_holders": 0, "stale_beliefs": 1, "stale_writes": 1, "faults": 1, "faults_effective": 1})
				w := window(t, r, "stale-belief")
				wantWindow(t, w, 3664e6, 5720e6)
				if w.ExpiredBy != 3671e6 || w.Writes != 1 || w.Fault != 6 {
					t.Errorf("stale window = %+v", w)
				}
				wantSame(t, "clients", w.Clients, []string{"c1", "c2"})
				wantSame(t, "events", w.Events, []int64{1, 5, 8, 20})
				if want := "c1 (token 33) believed it held the lock from 3.664 s until 5.720 s (its release); " +
					"its lease was valid at least until 3.664 s and expired by 3.671 s; c2 (token 34) acquired it at 3.700 s; " +
					"c1 attempted 1 write inside that window."; w.Message != want {
					t.Errorf("message = %q, want %q", w.Message, want)
				}
				if f := r.Faults[0]; !f.HitHolder || f.StaleWindows != 1 || f.StaleWrites != 1 {
					t.Errorf("fault effect = %+v", f)
				}
			},
		},
		{
			// c1's attempt takes the lock at 1.001 s and c1 is frozen before
			// it reads the answer; c2 takes the lock once c1's lease ran out;
			// c1 completes its acquire at 5.001 s, inside c2's window. c1's
			// own window is empty: no violation, a stale belief.
			name: "frozen-acquirer", lease: redisLease, model: "redis", want: Valid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "two_holders": 0, "stale_beliefs": 1, "stale_writes": 0})
				w := window(t, r, "stale-belief")
				wantWindow(t, w, 5001e6, 5400e6)
				wantSame(t, "clients", w.Clients, []string{"c1", "c2"})
			},
		},
		{
			// Renewals prove c1's lease to 1.600 + 2 − 0.002 = 3.598 s; the
			// renewal that timed out proves nothing. c2 is granted at 3.597 s:
			// 1 ms of two certain holders, credited to the clock fault.
			name: "bound-redis", lease: redisLease, model: "redis", want: Invalid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"two_holders": 1, "faults_effective": 1})
				wantWindow(t, window(t, r, "two-holders"), 3597e6, 3598e6)
				wantMentions(t, anomaly(t, r, "two-holders"), "certainly valid until 3.598 s", "(1.0 ms)")
				if f := r.Faults[0]; f.TwoHolders != 1 || !f.HitHolder {
					t.Errorf("fault effect = %+v", f)
				}
			},
		},
		{
			// The Extend sent at 1.666 s proves the lease to
			// 1.666 + 2 × (1 − 0.01) − 0.001 = 3.645 s: c2's grant at
			// 3.650 s is no violation.
			name: "bound-redlock", lease: redlockLease, model: "redlock", want: Valid,
			evidence: func(t *testing.T, r Result) {
				w := window(t, r, "stale-belief")
				wantWindow(t, w, 3645e6, 5710e6)
				if w.ExpiredBy != 3701e6 {
					t.Errorf("expired by %d", w.ExpiredBy)
				}
				wantMentions(t, Anomaly{Kind: w.Kind, Message: w.Message}, "c1 believed", "c2 acquired it at 3.650 s")
			},
		},
		{
			// Without the drift the same history would be a violation.
			name: "bound-redlock", lease: redisLease, model: "redis", want: Invalid,
		},
		{
			// c1's last heartbeat before its pause, sent at 8.091 s,
			// proves its session to 9.091 s (TTL/2 of slack); c4 is granted
			// at 10.272 s. After the pause c1 learns its session is lost,
			// releases, and its new session's heartbeat at 11.217 s is
			// answered: sent after the release, it proves nothing about
			// the old holding, which is a stale belief, not two holders.
			name: "zk-new-session", lease: zkLease, model: "zookeeper", want: Valid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"two_holders": 0, "stale_beliefs": 1})
				wantWindow(t, window(t, r, "stale-belief"), 9090900000, 11125600000)
			},
		},
		{
			// The keep-alive sent at 1.833 s and acknowledged with a TTL of
			// 2 s proves the session's lease to 3.833 s; c2 is granted at
			// 3.840 s. The Session's own keep-alives are not observed, so
			// no upper bound is claimed.
			name: "bound-etcd", lease: etcdLease, model: "etcd", want: Valid,
			evidence: func(t *testing.T, r Result) {
				w := window(t, r, "stale-belief")
				wantWindow(t, w, 3833e6, 5910e6)
				if w.ExpiredBy != 0 {
					t.Errorf("expired by %d, want unknown", w.ExpiredBy)
				}
			},
		},
		{
			name: "bound-etcd", lease: noLease, model: "none", want: Skipped,
		},
		{
			// c1's token statement (0.995 s) and its session check sent at
			// 1.666 s prove its holding; the server is killed at 2.000 s
			// and restarted, which ends c1's session; c2 is granted at
			// 2.600 s. c1's belief is stale from c2's grant to its release,
			// with its one write inside, credited to the kill: not a
			// broken promise.
			name: "pg-restart", lease: pgLease, model: "postgres", want: Valid,
			others: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "proven": 2, "two_holders": 0, "stale_beliefs": 1, "stale_writes": 1, "faults_effective": 1})
				w := window(t, r, "stale-belief")
				wantWindow(t, w, 2600e6, 2810e6)
				if w.ExpiredBy != 0 || w.Writes != 1 || w.Fault != 6 {
					t.Errorf("stale window = %+v", w)
				}
				wantSame(t, "clients", w.Clients, []string{"c1", "c2"})
				wantMentions(t, Anomaly{Kind: w.Kind, Message: w.Message}, "its session last proved alive by a statement sent at 1.666 s",
					"c2 (token 8) acquired it at 2.600 s")
			},
		},
		{
			// A TTL of 2 s from c1's last renewal would have made the
			// same grant a violation.
			name: "pg-restart", lease: redisLease, model: "redis", want: Invalid,
		},
		{
			// c1 holds the lock through a 4 s pause and c2 waits for it:
			// the lock failed closed. c1 releases as soon as it resumes,
			// before the heal is recorded as done; the fault still held
			// the lock from everyone until its heal began, so it reached a
			// holder: no weak evidence.
			name: "pg-paused-holder", lease: pgLease, model: "postgres", want: Valid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"faults": 1, "faults_effective": 0, "faults_held_through": 1, "stale_beliefs": 0})
				if f := r.Faults[0]; !f.HeldThrough || !f.HitHolder {
					t.Errorf("fault effect = %+v", f)
				}
				if got := Evidence(Valid, []Result{r}); got != "" {
					t.Errorf("evidence %q", got)
				}
			},
		},
		{
			// The pause chose c1 while it held token 7, but c1 released
			// and asked again before the SIGSTOP; c2 was granted during
			// the fault, released at 1.300 s, and the server then granted
			// the frozen c1, whose acquire completes after the heal: the
			// lock was kept from everyone from 1.300 s until the heal
			// began at 5.210 s, most of the fault.
			name: "pg-late-pause", lease: pgLease, model: "postgres", want: Valid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"faults": 1, "faults_held_through": 1, "stale_beliefs": 0})
				if f := r.Faults[0]; !f.HeldThrough || f.HeldFrom != 1300e6 {
					t.Errorf("fault effect = %+v, want held from 1.300 s", f)
				}
				if got := Evidence(Valid, []Result{r}); got != "" {
					t.Errorf("evidence %q", got)
				}
			},
		},
		{
			// The same, but c2 keeps the lock until 4.000 s: the frozen
			// c1 kept it from everyone for 1.2 s of a 4 s fault, less
			// than half: the pause mostly missed, weak evidence.
			name: "pg-late-pause-short", lease: pgLease, model: "postgres", want: Valid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"faults": 1, "faults_held_through": 0})
				if got := Evidence(Valid, []Result{r}); got != WeakEvidence || r.Faults[0].HeldThrough {
					t.Errorf("evidence %q, fault %+v", got, r.Faults[0])
				}
			},
		},
		{
			// Under a lease the same pause opens no window and holds
			// nothing through: weak evidence.
			name: "pg-paused-holder", lease: redisLease, model: "redis", want: Valid,
			evidence: func(t *testing.T, r Result) {
				if got := Evidence(Valid, []Result{r}); got != WeakEvidence || r.Faults[0].HeldThrough {
					t.Errorf("evidence %q, fault %+v", got, r.Faults[0])
				}
			},
		},
		{
			// c2 is granted at 1.200 s while c1's session check sent at
			// 1.500 s succeeds, and c2's own check at 1.600 s too: both
			// sessions held the lock from 1.200 s to 1.500 s.
			name: "pg-two-sessions", lease: pgLease, model: "postgres", want: Invalid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"two_holders": 1, "stale_beliefs": 0})
				wantWindow(t, window(t, r, "two-holders"), 1200e6, 1500e6)
			},
		},
		{
			// c1 holds from 0.302 s; a renewal sent at 0.800 s proves its
			// lease to 0.800 + 1 − 0.0015 = 1.7985 s, and it releases at
			// 1.702 s. c2 asked at 0.400 s, after c1's grant had
			// completed, and its reply came at 1.500 s: whichever way the
			// service ordered the grants, it granted c2 while c1's lease
			// was certain. c2's own lease is proven only to 1.3985 s,
			// before its reply, so its own window is empty: the grant is
			// still two holders, not a stale belief. The fence keeps the
			// data safe, and the run is invalid through exclusion alone.
			name: "late-reply-grant", lease: Lease{TTL: 1e9, SlackFixed: 1e6, SlackPPM: 500}, model: "redis", want: Invalid,
			others: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "proven": 2, "two_holders": 1})
				a := anomaly(t, r, "two-holders")
				wantSame(t, "clients", a.Clients, []string{"c1", "c2"})
				wantMentions(t, a, "c2 (token 2) asked for the lock at 0.400 s and was granted it by 1.500 s",
					"c1 (token 1), granted at 0.302 s, was certainly valid until 1.702 s", "the service granted the lock twice")
				wantWindow(t, window(t, r, "two-holders"), 400e6, 1500e6)
			},
		},
		{
			// Its twin: c2's reply comes at 1.800 s, after c1's release
			// at 1.702 s; the service may have granted c2 after it.
			name: "late-reply-after-release", lease: Lease{TTL: 1e9, SlackFixed: 1e6, SlackPPM: 500}, model: "redis", want: Valid,
			others: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "proven": 2, "two_holders": 0})
			},
		},
		{
			// Neither acquire records an attempt. On a single Redis the
			// lease is granted by the acquire's own request, sent no
			// earlier than its invocation: c1's lease is proven from
			// 0.100 s, and c2, granted at 0.202 s, held the lock beside
			// it until c1's release at 0.500 s.
			name: "invocation-overlap", lease: Lease{TTL: 1e9, SlackFixed: 1e6, SlackPPM: 500}, model: "redis", want: Invalid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "proven": 2, "bounded_by_invocation": 2, "two_holders": 1})
				wantWindow(t, window(t, r, "two-holders"), 202e6, 500e6)
			},
		},
		{
			// The same acquires under PostgreSQL's lock: an invocation
			// proves nothing past itself there, so no lease is proven.
			name: "invocation-overlap", lease: pgLease, model: "postgres", want: Unknown,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "proven": 0, "bounded_by_invocation": 0})
			},
		},
		{
			// Its twin: c2, waiting since 0.200 s, is granted at 0.504 s,
			// after c1's release: valid, both leases bounded from their
			// invocations.
			name: "invocation-serial", lease: Lease{TTL: 1e9, SlackFixed: 1e6, SlackPPM: 500}, model: "redis", want: Valid,
			others: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "proven": 2, "bounded_by_invocation": 2, "two_holders": 0})
				if !strings.Contains(r.Summary, "2 of 2 holdings proven, 2 bounded from their invocation") {
					t.Errorf("summary %q does not count the holdings bounded from their invocation", r.Summary)
				}
			},
		},
		{
			// The nemesis SIGKILLs c2 at 0.325 s, right after its grant:
			// c2 believes nothing after its kill, so its lease running
			// out at 1.2915 s opens no stale belief, and c1's grant at
			// 1.402 s comes after it. The kill reached a holder: the
			// fault was effective.
			name: "killed-holder-expires", lease: Lease{TTL: 1e9, SlackFixed: 1e6, SlackPPM: 500}, model: "redis", want: Valid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 7, "two_holders": 0, "stale_beliefs": 0, "faults": 1, "faults_effective": 1})
				if f := r.Faults[0]; !f.HitHolder || !f.KilledHolder {
					t.Errorf("fault effect = %+v, want a killed holder", f)
				}
				if got := Evidence(Valid, []Result{r}); got != "" {
					t.Errorf("evidence %q: a kill that reached the holder is no weak evidence", got)
				}
			},
		},
		{
			// Its twin: c1 is granted at 1.002 s, while the dead c2's
			// lease, never released, was certainly valid until 1.2915 s.
			name: "killed-holder-regranted", lease: Lease{TTL: 1e9, SlackFixed: 1e6, SlackPPM: 500}, model: "redis", want: Invalid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"two_holders": 1, "stale_beliefs": 0})
				wantWindow(t, window(t, r, "two-holders"), 1002e6, 1037e6)
			},
		},
		{
			// c1's ZooKeeper session is proven until 0.600 + 2 × 0.5 =
			// 1.600 s, but c1 learns at 0.800 s that it is lost and
			// closes it, which deletes its znode: c2's grant at 0.850 s
			// is the ensemble's answer to that, not a broken promise.
			name: "zk-loss-gives-up", lease: Lease{TTL: 2e9, SlackPPM: 500_000, Session: true, LossReleases: true}, model: "zookeeper", want: Valid,
			others: map[string]Verdict{"linearizable": Valid, "fence": Valid, "lost-updates": Valid},
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"holdings": 2, "proven": 2, "two_holders": 0})
			},
		},
		{
			// The same history under a lease that a client's loss does
			// not end (Redis's: a lost renewal deletes nothing) is two
			// holders: c1's lease was proven to 1.600 s.
			name: "zk-loss-gives-up", lease: zkLease, model: "session-kept", want: Invalid,
		},
		{
			// Its twin: c2 is granted at 0.780 s, before c1 learned of
			// any loss, while c1's session was certainly alive.
			name: "zk-grant-before-loss", lease: Lease{TTL: 2e9, SlackPPM: 500_000, Session: true, LossReleases: true}, model: "zookeeper", want: Invalid,
			evidence: func(t *testing.T, r Result) {
				wantCounts(t, r, map[string]int64{"two_holders": 1})
				wantWindow(t, window(t, r, "two-holders"), 780e6, 800e6)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.model, func(t *testing.T) {
			r := checkExclusion(t, tt.name, tt.lease)
			if r.Valid != tt.want {
				t.Fatalf("exclusion = %s, want %s: %s %s %+v", r.Valid, tt.want, r.Summary, r.Reason, r.Anomalies)
			}
			if len(tt.others) > 0 {
				in := load(t, tt.name)
				in.Lease = tt.lease
				rs := checkAll(in)
				for name, v := range tt.others {
					if rs[name].Valid != v {
						t.Errorf("%s = %s, want %s: %s", name, rs[name].Valid, v, rs[name].Summary)
					}
				}
				if got := Overall(mapValues(rs)); got != Invalid && tt.want == Invalid {
					t.Errorf("overall = %s: exclusion must count in the verdict", got)
				}
			}
			if tt.evidence != nil {
				tt.evidence(t, r)
			}
		})
	}
}

func mapValues(rs map[string]Result) []Result {
	var out []Result
	for _, r := range rs {
		out = append(out, r)
	}
	return out
}

// A run with faults that opened no window is weak evidence; one without
// faults, or one whose fault opened a window, is not called weak.
// Kleppmann's delayed packet, as the link fault makes it: c1's write is
// held on its way to the store, c1 gives up on it and lets the lock go,
// c2 takes the lock, reads 0 and writes 1, and then c1's write of 1 lands.
// No holder outlived its lease. With the fence the store turns the write
// away: valid, and not weak evidence, since a fault reached the data.
// Without it the write is accepted over c2's acknowledged increment.
func TestDelayedWrite(t *testing.T) {
	fenced := load(t, "delayed-write-fenced")
	fenced.Lease = redisLease
	rs := checkAll(fenced)
	// Progress has too few sections here to judge (unknown); it is no
	// part of what this history is about.
	var all []Result
	for _, n := range []string{"linearizable", "fence", "lost-updates", "exclusion"} {
		if rs[n].Valid != Valid {
			t.Errorf("fenced: %s %s: %s", n, rs[n].Valid, rs[n].Summary)
		}
		all = append(all, rs[n])
	}
	wantCounts(t, rs["fence"], map[string]int64{"rejected_writes": 1, "stale_accepted": 0})
	wantCounts(t, rs["exclusion"], map[string]int64{"two_holders": 0, "stale_beliefs": 0, "faults": 1, "faults_effective": 0})
	if got := Evidence(Overall(all), all); got != "" {
		t.Errorf("fenced: evidence %q, want none: the store turned a stale write away", got)
	}

	unfenced := load(t, "delayed-write-unfenced")
	unfenced.Lease = redisLease
	rs = checkAll(unfenced)
	if r := rs["lost-updates"]; r.Valid != Invalid || r.Counts["lost_acknowledged"] != 1 {
		t.Errorf("unfenced: lost-updates %s %v, want c2's acknowledged increment lost", r.Valid, r.Counts)
	}
	if r := rs["fence"]; r.Valid != Invalid || r.Counts["stale_accepted"] != 1 {
		t.Errorf("unfenced: fence %s %v, want the late write accepted as stale", r.Valid, r.Counts)
	}
	if r := rs["exclusion"]; r.Valid != Valid {
		t.Errorf("unfenced: exclusion %s: no two leases overlapped", r.Valid)
	}
}

func TestEvidence(t *testing.T) {
	paused := checkExclusion(t, "paused-holder", redisLease)
	if got := Evidence(Valid, []Result{paused}); got != "" {
		t.Errorf("paused-holder evidence = %q", got)
	}
	// One holding, then a partition of a node far from it.
	quiet := Exclusion{}.Check(Input{Lease: redisLease, History: []history.Event{
		{Index: 0, Time: 1e9, Process: "c1", Type: history.Invoke, F: history.Acquire},
		{Index: 1, Time: 1.1e9, Process: "c1", Type: history.OK, F: history.Acquire, Token: 1, Attempt: 1.05e9},
		{Index: 2, Time: 1.2e9, Process: "c1", Type: history.Invoke, F: history.Release, Token: 1},
		{Index: 3, Time: 1.3e9, Process: "c1", Type: history.OK, F: history.Release, Token: 1},
		{Index: 4, Time: 2e9, Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: "partition", Targets: []string{"r2"}},
	}})
	if quiet.Valid != Valid || quiet.Counts["faults"] != 1 || quiet.Counts["faults_effective"] != 0 {
		t.Fatalf("quiet run = %s %v", quiet.Valid, quiet.Counts)
	}
	if got := Evidence(Valid, []Result{quiet}); got != WeakEvidence {
		t.Errorf("quiet run evidence = %q", got)
	}
	if got := Evidence(Invalid, []Result{quiet}); got != "" {
		t.Errorf("invalid run evidence = %q", got)
	}
	// The same run, where the store turned away a request that landed
	// after a newer holder's: a fault reached the data, and the fence held.
	fenced := Result{Checker: Fence{}.Name(), Valid: Valid, Counts: map[string]int64{"rejected_writes": 1}}
	if got := Evidence(Valid, []Result{quiet, fenced}); got != "" {
		t.Errorf("quiet run with a stale write rejected: evidence = %q", got)
	}
	fenced.Counts = map[string]int64{"rejected_writes": 0, "rejected_reads": 0}
	if got := Evidence(Valid, []Result{fenced, quiet}); got != WeakEvidence {
		t.Errorf("quiet run with nothing rejected: evidence = %q", got)
	}
}

// TestLeaseValidate: an attempt after its own acquire's reply, or, where
// the lease is granted per acquire, before its invocation, and a negative
// TTL are refused, naming the line; each has a twin that is accepted (an
// attempt at the reply itself; the same early attempt on a session's
// lease, where it is the session's last keep-alive).
func TestLeaseValidate(t *testing.T) {
	redis := Lease{TTL: 1e9, SlackFixed: 1e6, SlackPPM: 500}
	for _, c := range []struct {
		name  string
		lease Lease
		want  string // "" to accept
	}{
		{"attempt-after-reply", redis, "history line 2: c1's acquire records an attempt sent at 0.103 s, after its reply at 0.102 s"},
		{"attempt-at-reply", redis, ""},
		{"attempt-before-invoke", redis, "history line 2: c1's acquire records an attempt sent at 0.090 s, before the acquire was invoked at 0.100 s"},
		{"attempt-before-invoke", etcdLease, ""},
		{"ttl-negative", redis, "history line 2: c1's acquire has a negative ttl"},
		{"two-holders", redisLease, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.lease.Validate(load(t, c.name).History)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == "":
			case err == nil:
				t.Fatalf("accepted, want %q", c.want)
			case !errors.Is(err, history.ErrMalformed) || !strings.Contains(err.Error(), c.want):
				t.Errorf("error %q, want a malformed history mentioning %q", err, c.want)
			}
		})
	}
}
