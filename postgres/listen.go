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
	conn, err := pgx.ConnectConfig(ctx, s.ownConnConfig(listenRole))
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	s.listenPID.Store(conn.PgConn().PID())
	return conn, nil
}

// listenRole names the LISTEN connection (its application_name, with the
// schema): the notifier counts the other nodes by it.
const listenRole = "queue listen"

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
// whole cluster's write rate; a NOTIFY of its own commits without waiting
// for a flush (synchronous_commit off), is coalesced here, and is sent only
// when another node listens. A notification lost to a crash between commit and
// send costs a waiting claimer at most its 1s recheck.
func (s *Store) notifier() {
	defer s.bgWG.Done()
	ctx, cancel := s.stopping()
	defer cancel()
	var conn *pgx.Conn
	var p peers
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
			s.sendNotify(context.Background(), &conn, &p) // what the last writes asked for
			return
		}
		s.sendNotify(ctx, &conn, &p)
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
	cfg := s.ownConnConfig("queue notify")
	// pg_notify takes a transaction ID, so each send committed with a WAL
	// flush of its own; a notification need not outlive a crash (the
	// claimers' recheck finds the work), so it does not wait for one.
	cfg.RuntimeParams["synchronous_commit"] = "off"
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	*conn = c
	s.notifyPID.Store(c.PgConn().PID())
	return nil
}

// peersEvery is how long the notifier trusts its count of the other nodes
// listening. A node that starts meanwhile misses at most that much of the
// others' wake-ups; its waiting claimers find that work at their 1s
// recheck, as after a lost notification.
const peersEvery = time.Second

// peers is the notifier's last count of the other nodes listening.
type peers struct {
	at   time.Time
	some bool
}

// othersListen reports whether a node other than this one listens on the
// store's channel (its LISTEN connection's application_name, which names
// the schema), asking PostgreSQL at most once per peersEvery. A node alone
// sends no NOTIFY: in process a busy worker leaves most jobs to no waiting
// claimer, and a lone node sent about 200 a second for no one.
// When it cannot tell, it assumes there are.
func (s *Store) othersListen(ctx context.Context, conn *pgx.Conn, p *peers) bool {
	if !p.at.IsZero() && time.Since(p.at) < peersEvery {
		return p.some
	}
	var others bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> $2)`,
		s.ownConnConfig(listenRole).RuntimeParams["application_name"], int64(s.listenPID.Load())).Scan(&others)
	if err != nil {
		return true // the send reports a broken connection
	}
	p.at, p.some = time.Now(), others
	return others
}

// sendNotify sends the pending NOTIFYs on *conn, connecting it first if
// needed, when another node listens; a connection that failed is closed,
// for the next send to open.
func (s *Store) sendNotify(ctx context.Context, conn **pgx.Conn, p *peers) {
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
	if err == nil && s.othersListen(ctx, *conn, p) {
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
