package backends

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nemesis"
)

// ZooKeeper is a three-member ZooKeeper ensemble (Debian's 3.8, on the JVM
// image) locked with ZooKeeper's own recipe (ephemeral sequential znodes,
// each contender watching its predecessor); the token is the holder's
// znode's creation zxid.
type ZooKeeper struct{}

var zkNames = []string{"z1", "z2", "z3"}

// zkSyncLimit is how many ticks a follower waits for its leader before it
// stops serving (and the leader for a follower's acknowledgement). The
// lease model (Lease) is computed from it and from zkTick.
const zkSyncLimit = 2

// zkTick is the ensemble's tickTime for a lease of ttl: an eighth of it,
// well under the quarter beyond which the minimum session timeout the
// server allows (2 × tickTime) would outlast the TTL asked for, and short
// enough that a follower cut off from its leader stops answering within
// ttl/4.
func zkTick(ttl time.Duration) time.Duration { return ttl / 8 }

// Name implements Backend.
func (ZooKeeper) Name() string { return "zookeeper" }

// About implements Backend.
func (ZooKeeper) About() string { return "three ZooKeeper members, the lock recipe" }

// Tokens implements Backend.
func (ZooKeeper) Tokens() bool { return true }

// Locks implements Backend.
func (ZooKeeper) Locks() bool { return true }

// Layout implements Backend. Each member writes its config and id at start,
// so that a restart after a kill finds them again, with its data directory
// as the kill left it. The heap is small and the serial collector keeps
// three JVMs light on a small machine.
func (ZooKeeper) Layout(cfg *config.Config) Layout {
	l := Layout{Addrs: withPort(zkNames, 2181), Ready: zkReady(), Startup: 4 * time.Second}
	for i, n := range zkNames {
		l.Services = append(l.Services, Service{
			Node: clusters.Node{Name: n, Role: "zookeeper", Cmd: []string{"sh", "-c",
				"mkdir -p " + zkDataDir + " && echo " + fmt.Sprint(i+1) + " > " + zkDataDir + "/myid && " +
					"printf '%s\\n' \"$0\" > /etc/zookeeper.cfg && " +
					"exec java -Xms32m -Xmx192m -XX:+UseSerialGC -Dzookeeper.preAllocSize=" + fmt.Sprint(zkPreAllocKB) +
					" -cp /usr/share/java/zookeeper.jar org.apache.zookeeper.server.quorum.QuorumPeerMain /etc/zookeeper.cfg",
				zkConfig(cfg.TTL.D(), cfg.Has(nemesis.PowerLossFault))}},
			Image:   images.JVM,
			Probe:   zkSrvr("127.0.0.1", `grep '^Mode: '`),
			Version: zkSrvr("127.0.0.1", `sed -n 's/^Zookeeper version: //p'`),
			DataDir: zkDataDir,
		})
	}
	// A paused or cut-off member does not answer, and one that lost its
	// quorum no longer says it leads.
	l.Leader = func(ctx context.Context, ex Execer) (string, error) {
		for _, n := range zkNames {
			out, err := ex.Exec(ctx, n, zkSrvr("127.0.0.1", `grep '^Mode: '`)...)
			if err == nil && strings.TrimSpace(out) == "Mode: leader" {
				return n, nil
			}
		}
		return "", fmt.Errorf("no member of %s says it leads", strings.Join(zkNames, ", "))
	}
	return l
}

// zkDataDir is where each member keeps its id, transaction log and
// snapshots.
const zkDataDir = "/var/lib/zookeeper"

// zkPreAllocKB is the size, in KiB, by which a member grows its
// transaction log ahead of its writes (zookeeper.preAllocSize, 64 MiB by
// default): a few MiB hold every transaction of a run, and a small file
// keeps the lockbench disk's record of a power-loss run small.
const zkPreAllocKB = 4096

// zkConfig is the members' zoo.cfg. The session timeout is pinned to the
// TTL (minSessionTimeout = maxSessionTimeout): the server clamps what a
// client asks for into that range, so the negotiated timeout is the TTL.
// forceSync=no for the reason etcd runs without fsync: a killed process
// loses nothing the page cache holds, and fsync would time the overlay's
// disk. A power loss takes back what was not fsynced: there the members
// fsync their log before they acknowledge, as ZooKeeper does by default
// (on the lockbench disk, which costs no real fsync). Only `srvr` is
// needed among the four-letter words, and it is the only one ZooKeeper
// 3.8 allows by default.
func zkConfig(ttl time.Duration, fsync bool) string {
	forceSync := "forceSync=no"
	if fsync {
		forceSync = "forceSync=yes"
	}
	lines := []string{
		fmt.Sprintf("tickTime=%d", zkTick(ttl).Milliseconds()),
		"initLimit=40",
		fmt.Sprintf("syncLimit=%d", zkSyncLimit),
		fmt.Sprintf("minSessionTimeout=%d", ttl.Milliseconds()),
		fmt.Sprintf("maxSessionTimeout=%d", ttl.Milliseconds()),
		"dataDir=" + zkDataDir,
		"clientPort=2181",
		forceSync,
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr",
	}
	for i, n := range zkNames {
		lines = append(lines, fmt.Sprintf("server.%d=%s:2888:3888", i+1, n))
	}
	return strings.Join(lines, "\n")
}

// zkSrvr asks the member at host for `srvr` and filters the answer through
// filter, with bash's /dev/tcp: the JVM image holds no lockbench binary
// and no netcat.
func zkSrvr(host, filter string) []string {
	return []string{"bash", "-c", `exec 3<>/dev/tcp/` + host + `/2181 && echo srvr >&3 && timeout 2 cat <&3 | ` + filter}
}

// zkReady is the ensemble's readiness: every member serves, as leader or
// follower, and exactly one leads. It prints one line for test.json.
func zkReady() []string {
	return []string{"bash", "-c", `leaders=""; for h in ` + strings.Join(zkNames, " ") + `; do ` +
		`m=$(exec 3<>/dev/tcp/$h/2181 && echo srvr >&3 && timeout 2 cat <&3 | sed -n 's/^Mode: //p'); ` +
		`case "$m" in leader) leaders="$leaders $h";; follower) ;; *) echo "$h: ${m:-no answer}"; exit 1;; esac; done; ` +
		`set -- $leaders; [ $# -eq 1 ] || { echo "leaders:$leaders"; exit 1; }; ` +
		`echo "` + fmt.Sprint(len(zkNames)) + ` members, leader $1"`}
}

// Refuses implements Backend.
func (ZooKeeper) Refuses(fault string) string {
	if fault == "clock" {
		return "ZooKeeper times sessions on the JVM's monotonic clock (System.nanoTime), which no LD_PRELOAD moves"
	}
	return ""
}

// Check implements Backend: the session timeout is configured in whole
// milliseconds, and a shorter one than the TTL would break the lease
// model; the tick, an eighth of it rounded down, must not be zero.
func (ZooKeeper) Check(cfg *config.Config) error {
	if ttl := cfg.TTL.D(); ttl < 8*time.Millisecond || ttl%time.Millisecond != 0 {
		return config.Usage("ZooKeeper's session timeout and tick count whole milliseconds: --ttl must be at least 8ms, in whole ms, got %s", ttl)
	}
	return unsized(cfg)
}

// Lease implements Backend. The lock's znode lives as long as its session,
// which the leader expires a session timeout (the TTL) after its last touch
// of the session, on the JVM's monotonic clock (System.nanoTime, the
// history's kernel clock), rounded up to a tick; a new leader touches every
// session afresh. A request the client sent at s and saw answered was
// received after s by some member. The leader touches at once; a follower
// only relays the sessions it heard from in its reply to the leader's next
// ping (every tickTime/2), and a follower cut off from its leader goes on
// answering for up to syncLimit × tickTime before it drops its clients.
// The touch the leader last got is therefore at most (syncLimit + 1) ×
// tickTime older than any answer (the reply in flight when the link is cut
// is lost), plus the gap between the client's requests, one heartbeat
// (TTL/locks.ZooKeeperHeartbeats). With tickTime = TTL/8 and syncLimit = 2
// the slack is 3·TTL/8 + TTL/8 = TTL/2. The bound assumes one fault at a
// time: a client frozen just as its follower is cut off sends no requests
// to relay while the follower can still answer the next. The session, as
// etcd's, is kept alive by pings the client does not observe.
func (ZooKeeper) Lease(ttl int64) checkers.Lease {
	// A lost session is closed at once (locks.ZooKeeper), which gives the
	// lock up.
	return checkers.Lease{TTL: ttl, SlackPPM: 500_000, Session: true, LossReleases: true}
}

// Client implements Backend.
func (ZooKeeper) Client(s Spec, trace locks.Trace, fp locks.Failpoint, _ *rand.Rand) (Client, error) {
	return Client{Lock: locks.NewZooKeeper(locks.ZooKeeperConfig{Servers: s.LockAddrs, Dir: "/lockbench/lock/" + s.Key,
		Owner: s.Process, TTL: s.TTL.D(), Trace: trace, Failpoint: fp, Variant: s.Variant})}, nil
}

// Variants implements Mutant.
func (ZooKeeper) Variants() []Variant {
	return []Variant{
		{locks.CreateRetry, "creates its sequential znode again after a lost connection, without a protected name to find the first by"},
	}
}

// Failpoints implements Mutant.
func (ZooKeeper) Failpoints() []string { return []string{locks.FailReplyHeld} }
