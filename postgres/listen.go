package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// listenConn opens the store's own LISTEN connection (outside the pool, so
// it never goes back to it while listening).
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.ownConnConfig("queue listen"))
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// listen wakes local claimers for every NOTIFY on the store's channel (the
// payload is the queue), whichever node sent it. When the connection is
// lost it reconnects with backoff; notifications sent meanwhile are lost,
// so after reconnecting it wakes every queue someone waited on (the
// claimers look again; their own 1s recheck would find the work too).
func (s *Store) listen(conn *pgx.Conn) {
	defer s.bgWG.Done()
	ctx, cancel := s.stopping()
	defer cancel()
	backoff := 100 * time.Millisecond
	for {
		if conn != nil {
			err := s.receive(ctx, conn)
			conn.Close(context.Background())
			conn = nil
			if ctx.Err() != nil {
				return
			}
			s.log.Warn().Err(err).Str("channel", s.channel).Msg("wake-up listener lost its connection; reconnecting")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		c, err := s.listenConn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
			s.log.Warn().Err(err).Dur("retry_in", backoff).Msg("wake-up listener cannot reconnect")
			continue
		}
		conn, backoff = c, 100*time.Millisecond
		s.log.Info().Str("channel", s.channel).Msg("wake-up listener reconnected")
		s.notify.NotifyAll() // what was sent while it was away is lost: everyone looks again
	}
}

// listenCheck is how long the listener waits in silence before it proves
// its connection alive: a connection dropped on the way (a firewall, a
// failover) would otherwise look like a quiet channel forever.
var listenCheck = 30 * time.Second

// receive hands notifications to the Notifier until the connection fails
// or the store closes.
func (s *Store) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			// This node's own NOTIFYs come back too: its claimers were
			// woken at the commits, in proportion to the jobs; another
			// wake-up would have one more of them claim for nothing.
			if n.PID != s.notifyPID.Load() {
				s.notify.Notify(n.Payload)
			}
			continue
		case ctx.Err() != nil || !pgconn.Timeout(err):
			return err
		}
		// A quiet spell (the timeout leaves the connection usable): ping.
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return err
		}
	}
}

// broadcast asks the notifier to tell the other nodes that queues may have
// claimable work. It never waits.
func (s *Store) broadcast(queues []string) {
	if len(queues) == 0 {
		return
	}
	s.pendingMu.Lock()
	for _, q := range queues {
		s.pending[q] = struct{}{}
	}
	s.pendingMu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a send is already due
	}
}

// notifier sends the NOTIFYs that broadcast asked for, after the commits
// that made the work claimable: one statement for every queue that came up
// while the previous one was on its way, on a connection of its own (its
// backend's PID tells the listener which notifications are this node's
// own). NOTIFY is not sent inside the write transactions on purpose:
// PostgreSQL serializes the commits of all transactions that NOTIFY (a
// database-wide lock held through the commit's flush), which would cap the
// whole cluster's write rate; a NOTIFY of its own commits without a flush
// and is coalesced here. A notification lost to a crash between commit and
// send costs a waiting claimer at most its 1s recheck.
func (s *Store) notifier() {
	defer s.bgWG.Done()
	ctx, cancel := s.stopping()
	defer cancel()
	var conn *pgx.Conn
	s.notifyConn(ctx, &conn) // now, not at the first wake-up (a failure is logged at the first send)
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			s.sendNotify(context.Background(), &conn) // what the last writes asked for
			return
		}
		s.sendNotify(ctx, &conn)
		// At most one NOTIFY per notifyEvery: under load every commit asks
		// for one, and each costs the database a statement; a claimer on
		// another node waits at most this much longer.
		select {
		case <-time.After(notifyEvery):
		case <-s.stop:
		}
	}
}

// notifyEvery is the shortest time between two NOTIFYs of a node.
const notifyEvery = 2 * time.Millisecond

// notifyConn connects *conn, the notifier's connection, unless it is.
func (s *Store) notifyConn(ctx context.Context, conn **pgx.Conn) error {
	if *conn != nil {
		return nil
	}
	c, err := pgx.ConnectConfig(ctx, s.ownConnConfig("queue notify"))
	if err != nil {
		return err
	}
	*conn = c
	s.notifyPID.Store(c.PgConn().PID())
	return nil
}

// sendNotify sends the pending NOTIFYs on *conn, connecting it first if
// needed; a connection that failed is closed, for the next send to open.
func (s *Store) sendNotify(ctx context.Context, conn **pgx.Conn) {
	s.pendingMu.Lock()
	queues := make([]string, 0, len(s.pending))
	for q := range s.pending {
		queues = append(queues, q)
	}
	clear(s.pending)
	s.pendingMu.Unlock()
	if len(queues) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := s.notifyConn(ctx, conn)
	if err == nil {
		_, err = (*conn).Exec(ctx, `SELECT pg_notify($1, q) FROM unnest($2::text[]) AS q`, s.channel, queues)
	}
	if err != nil {
		if *conn != nil {
			s.notifyPID.Store(0)
			(*conn).Close(context.Background())
			*conn = nil
		}
		if ctx.Err() == nil {
			s.log.Warn().Err(err).Strs("queues", queues).Msg("wake-up notify failed; other nodes find the work at their next recheck")
		}
	}
}
