package locks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeperConfig configures a ZooKeeper lock client.
type ZooKeeperConfig struct {
	Servers []string // host:port of every member
	Dir     string   // the lock's znode; contenders create their children in it
	Owner   string   // this client's name, the data of its znodes
	// TTL is the session timeout asked for. The ensemble must be
	// configured to grant exactly it (minSessionTimeout = maxSessionTimeout).
	TTL   time.Duration
	Trace Trace
	// Failpoint, when set, may hold the client at FailReplyHeld.
	Failpoint Failpoint
	// Variant is "" or config's correct for the recipe, else CreateRetry.
	Variant string
}

// ZooKeeperHeartbeats is how many requests a session sends per TTL to prove
// it alive (beside the library's unobservable pings, every TTL/3). The lease
// bound in checkers assumes a request at least every TTL/8.
const ZooKeeperHeartbeats = 8

// ZooKeeper is the lock recipe of ZooKeeper's documentation ("Recipes and
// Solutions: Locks") on go-zookeeper's primitives: each contender creates
// an ephemeral sequential znode under Dir and holds the lock when its znode
// is the lowest; otherwise it watches the next lower one. The library's own
// Lock is not used: it takes no context, leaves its znode behind on error
// and hides its path.
//
// One session per client, shared by its holdings until it is lost. As
// Curator's Technical Note 14 advises, a suspended connection (Disconnected)
// is treated as loss of the lock, not only an expired session: while
// disconnected the client cannot know whether the ensemble has expired its
// session and given the lock to someone else. A lost session is closed at
// once and never reconnected; the next Acquire starts a new one.
//
// The fencing token is the czxid of the holder's znode: the zxid of the
// transaction that created it, which grows across the whole ensemble and
// across leader changes (the epoch is its high 32 bits).
type ZooKeeper struct {
	cfg ZooKeeperConfig

	mu      sync.Mutex
	session *zkSession
}

// zkSession is one ZooKeeper session with its proof of life: the send time
// of the newest request the ensemble answered (see checkers' lease bound
// for why that proves the session, and so every znode it owns, lived on
// for a known time after it).
type zkSession struct {
	conn    *zk.Conn
	timeout time.Duration // the negotiated session timeout
	lost    chan struct{}
	once    sync.Once
	// done is closed when the heartbeat loop has returned.
	done chan struct{}

	// tap sees the session's frames, for FailReplyHeld.
	tap *zkTap

	// id is the session's id. When the ensemble expires a session,
	// go-zookeeper opens a new one on the same Conn without being asked
	// and sends the requests still queued on it: an answer proves this
	// session alive only while the Conn still has its id.
	id int64

	mu   sync.Mutex
	sent int64
}

// own is err, or errReplaced when the answer just read came from a
// session other than this one: the Conn no longer has its id.
func (s *zkSession) own(err error) error {
	if err == nil && s.conn.SessionID() != s.id {
		return errReplaced
	}
	return err
}

// errReplaced is an answer on the session go-zookeeper opened after this
// one expired.
var errReplaced = errors.New("answered on a new session: this one expired")

func (s *zkSession) markLost() { s.once.Do(func() { close(s.lost) }) }

func (s *zkSession) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

// proved records an answered request sent at sent.
func (s *zkSession) proved(sent int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = max(s.sent, sent)
}

func (s *zkSession) granted() (int64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent, s.timeout
}

// NewZooKeeper makes a client; it connects on the first Acquire.
func NewZooKeeper(cfg ZooKeeperConfig) *ZooKeeper { return &ZooKeeper{cfg: cfg} }

// Close ends the session (deleting its znodes) and stops its heartbeats.
func (z *ZooKeeper) Close() error {
	z.mu.Lock()
	s := z.session
	z.session = nil
	z.mu.Unlock()
	if s != nil {
		z.end(s)
	}
	return nil
}

// end closes a session: the library sends closeSession, which deletes the
// session's ephemeral znodes at once when it reaches the ensemble;
// otherwise they go when the ensemble expires the session.
func (z *ZooKeeper) end(s *zkSession) {
	s.markLost()
	s.conn.Close()
	<-s.done
}

// liveSession returns the client's session, starting a new one when there
// is none or the last one is lost.
func (z *ZooKeeper) liveSession(ctx context.Context) (*zkSession, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.session != nil && !z.session.isLost() {
		return z.session, nil
	}
	if old := z.session; old != nil {
		z.session = nil
		z.end(old)
	}
	s := &zkSession{lost: make(chan struct{}), done: make(chan struct{}), tap: &zkTap{fp: z.cfg.Failpoint}}
	connected := make(chan struct{})
	var once sync.Once
	// The session's creation is its first proof: the ensemble started the
	// session's timeout after it received the request, sent after now.
	sent := now(z.cfg.Trace)
	// The library's own dialer, unless the nemesis may arm FailReplyHeld.
	dial := zk.Dialer(net.DialTimeout)
	if z.cfg.Failpoint != nil {
		dial = s.tap.dial
	}
	conn, events, err := zk.Connect(z.cfg.Servers, z.cfg.TTL, zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithDialer(dial),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			switch ev.State {
			case zk.StateHasSession:
				once.Do(func() { close(connected) })
			case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
				if ev.State == zk.StateDisconnected && z.cfg.Variant == CreateRetry {
					// The variant rides out a disconnection (CreateRetry).
					break
				}
				// Before the session exists a disconnection is only a
				// failed dial, which the library retries.
				select {
				case <-connected:
					s.markLost()
				default:
				}
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("zookeeper connect: %w", err)
	}
	// The callback sees every event; the channel only has to be drained.
	go func() {
		for range events {
		}
	}()
	s.conn = conn
	select {
	case <-connected:
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("zookeeper session: %w", ctx.Err())
	}
	// The ensemble clamps the timeout asked for into [minSessionTimeout,
	// maxSessionTimeout], both set to the TTL, so it grants exactly it.
	s.timeout = z.cfg.TTL
	s.sent = sent
	s.id = conn.SessionID()
	if err := z.ensureDir(s); err != nil {
		conn.Close()
		return nil, err
	}
	go z.heartbeat(s)
	z.session = s
	return s, nil
}

// ensureDir creates the lock's znode and its parents.
func (z *ZooKeeper) ensureDir(s *zkSession) error {
	p := ""
	for _, part := range strings.Split(strings.Trim(z.cfg.Dir, "/"), "/") {
		p += "/" + part
		if _, err := s.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// heartbeat asks the ensemble for the lock's znode every TTL/8 and records
// each request as a renewal: an answered one proves the session alive, as
// a keep-alive proves an etcd lease. ZooKeeper has no keep-alive to
// observe (the library's pings are private), so these requests stand in
// for it. The session ends on a failed one only through the library's
// own state, as ZooKeeper's clients do.
func (z *ZooKeeper) heartbeat(s *zkSession) {
	defer close(s.done)
	tick := time.NewTicker(z.cfg.TTL / ZooKeeperHeartbeats)
	defer tick.Stop()
	for {
		select {
		case <-s.lost:
			// Closed at once: the library would otherwise reconnect and
			// revive a session the ensemble has not expired yet, whose
			// znode would then keep the lock from the others while this
			// client believes it lost.
			s.conn.Close()
			return
		case <-tick.C:
		}
		sent := now(z.cfg.Trace)
		done := renewing(z.cfg.Trace)
		_, _, err := s.conn.Exists(z.cfg.Dir)
		err = s.own(err)
		switch {
		case err == nil:
			s.proved(sent)
			done(s.timeout, nil)
		case errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, errReplaced):
			s.markLost()
			done(0, fmt.Errorf("%w: heartbeat: %w", ErrNotHeld, err))
		default:
			done(0, fmt.Errorf("%w: heartbeat: %w", ErrUnknown, err))
		}
	}
}

// Acquire creates this client's znode and waits until it is the lowest, or
// ctx ends, or the session is lost.
func (z *ZooKeeper) Acquire(ctx context.Context) (Lease, error) {
	s, err := z.liveSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
	}
	sent := now(z.cfg.Trace)
	create := z.create
	if z.cfg.Variant == CreateRetry {
		create = z.createRetrying
	}
	me, err := create(s)
	// A znode of a new session goes with this one.
	err = s.own(err)
	if err != nil {
		// A create lost with the connection may have been applied: its
		// znode would wait in line, so the session must go.
		z.drop(s)
		return nil, fmt.Errorf("%w: create: %w", ErrUnknown, err)
	}
	s.proved(sent)
	token, err := z.wait(ctx, s, me)
	if err != nil {
		if ctx.Err() != nil && !s.isLost() {
			// Give up our place in line; if that fails, the session
			// goes, and the znode with it.
			if derr := s.conn.Delete(me, -1); derr == nil || errors.Is(derr, zk.ErrNoNode) {
				return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
			}
		}
		z.drop(s)
		return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	return &zkLease{z: z, s: s, path: me, token: token}, nil
}

// create makes the contender's ephemeral sequential znode.
func (z *ZooKeeper) create(s *zkSession) (string, error) {
	s.tap.expectCreate()
	return s.conn.Create(z.cfg.Dir+"/lock-", []byte(z.cfg.Owner), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
}

// wait blocks until me is the lowest of the lock's children and returns
// its czxid. Each contender watches only its predecessor, so a release
// wakes one client, not all (the recipe's answer to the herd effect).
func (z *ZooKeeper) wait(ctx context.Context, s *zkSession, me string) (int64, error) {
	name := path.Base(me)
	for {
		sent := now(z.cfg.Trace)
		children, _, err := s.conn.Children(z.cfg.Dir)
		err = s.own(err)
		if err != nil {
			return 0, fmt.Errorf("list contenders: %w", err)
		}
		s.proved(sent)
		slices.SortFunc(children, func(a, b string) int { return sequence(a) - sequence(b) })
		i := slices.Index(children, name)
		if i < 0 {
			return 0, fmt.Errorf("%w: znode %s is gone", ErrNotHeld, me)
		}
		if i == 0 {
			sent := now(z.cfg.Trace)
			ok, st, err := s.conn.Exists(me)
			err = s.own(err)
			if err != nil {
				return 0, fmt.Errorf("read czxid: %w", err)
			}
			if !ok {
				return 0, fmt.Errorf("%w: znode %s is gone", ErrNotHeld, me)
			}
			s.proved(sent)
			return st.Czxid, nil
		}
		ok, _, ch, err := s.conn.ExistsW(z.cfg.Dir + "/" + children[i-1])
		if err != nil {
			return 0, fmt.Errorf("watch predecessor: %w", err)
		}
		if !ok {
			continue
		}
		select {
		case <-ch:
		case <-s.lost:
			return 0, errors.New("session lost while waiting")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// sequence is the counter ZooKeeper appended to a sequential znode's name
// (ten digits); names are compared by it, not as strings, as the recipe
// says.
func sequence(name string) int {
	n, _ := strconv.Atoi(name[max(0, len(name)-10):])
	return n
}

// drop ends a session whose znodes may be in the way.
func (z *ZooKeeper) drop(s *zkSession) {
	z.mu.Lock()
	if z.session == s {
		z.session = nil
	}
	z.mu.Unlock()
	z.end(s)
}

type zkLease struct {
	z     *ZooKeeper
	s     *zkSession
	path  string
	token int64
}

func (l *zkLease) Token() (int64, bool) { return l.token, true }

// Lost is the session's loss: expired, or suspended (TN14).
func (l *zkLease) Lost() <-chan struct{} { return l.s.lost }

// Granted is the session's newest proof: the znode lives as long as the
// session, whenever it became the lowest.
func (l *zkLease) Granted() (int64, time.Duration) { return l.s.granted() }

func (l *zkLease) Release(ctx context.Context) error {
	if l.s.isLost() {
		return ErrNotHeld
	}
	err := l.s.conn.Delete(l.path, -1)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return ErrNotHeld
	default:
		l.z.drop(l.s)
		return fmt.Errorf("%w: release: %w", ErrUnknown, err)
	}
}
