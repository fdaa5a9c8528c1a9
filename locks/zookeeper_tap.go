package locks

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// zkOpCreate is the opcode of ZooKeeper's create request (go-zookeeper
// keeps its opcodes private), the request Conn.Create sends.
const zkOpCreate = 1

// errReplyLost is what a connection reads in place of a reply lost at
// FailReplyHeld.
var errReplyLost = errors.New("reply lost at failpoint " + FailReplyHeld)

// zkTap reads a session's frames as go-zookeeper writes and reads them,
// for FailReplyHeld: the reply to the contender's create, once the
// ensemble applied it, is offered to the failpoint before the library sees
// it, and a client held there never reads it: its connection resets. The
// library reconnects and resumes the session, as after any lost
// connection. Written by hand: no kept library loses one reply of a
// framed stream while delivering the others (a proxy would have to parse
// ZooKeeper's frames just the same).
type zkTap struct {
	fp Failpoint

	mu sync.Mutex
	// expect is set until the contender's next create goes out.
	expect bool
	// xid is that create's request id while its reply is awaited.
	xid      int32
	awaiting bool
}

// expectCreate marks the next create written as the contender's.
func (t *zkTap) expectCreate() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expect = true
}

// dial is the session's zk.Dialer.
func (t *zkTap) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return &tapConn{Conn: c, tap: t}, nil
}

// tapConn is one connection of a tapped session. go-zookeeper writes each
// frame (a 4-byte length, then the body) in one Write, and reads with
// io.ReadFull; the first frame each way is the session handshake, which
// has no request header.
type tapConn struct {
	net.Conn
	tap *zkTap
	// wrote and read are set once the handshake's frame went out and came
	// in; wrote belongs to the writing goroutine, read and pending to the
	// reading one.
	wrote, read bool
	pending     []byte
}

// Write implements net.Conn, noting the xid of the contender's create: a
// request frame's body starts with its xid and opcode.
func (c *tapConn) Write(b []byte) (int, error) {
	if !c.wrote {
		c.wrote = true
	} else if len(b) >= 12 && int32(binary.BigEndian.Uint32(b[8:12])) == zkOpCreate {
		t := c.tap
		t.mu.Lock()
		if t.expect {
			t.expect, t.awaiting, t.xid = false, true, int32(binary.BigEndian.Uint32(b[4:8]))
		}
		t.mu.Unlock()
	}
	return c.Conn.Write(b)
}

// Read implements net.Conn a whole frame at a time: a reply frame's body
// starts with its xid, the zxid and an error code (0 when applied).
func (c *tapConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		var head [4]byte
		if _, err := io.ReadFull(c.Conn, head[:]); err != nil {
			return 0, err
		}
		frame := make([]byte, 4+binary.BigEndian.Uint32(head[:]))
		copy(frame, head[:])
		if _, err := io.ReadFull(c.Conn, frame[4:]); err != nil {
			return 0, err
		}
		if !c.read {
			c.read = true
		} else if len(frame) >= 20 && c.held(int32(binary.BigEndian.Uint32(frame[4:8])), int32(binary.BigEndian.Uint32(frame[16:20]))) {
			c.Conn.Close()
			return 0, errReplyLost
		}
		c.pending = frame
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// held reports whether the reply with xid and error code code is the
// awaited create's, applied, and the client was held at FailReplyHeld.
func (c *tapConn) held(xid, code int32) bool {
	t := c.tap
	t.mu.Lock()
	mine := t.awaiting && xid == t.xid
	if mine {
		t.awaiting = false
	}
	t.mu.Unlock()
	return mine && code == 0 && t.fp.hold(FailReplyHeld)
}
