package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

// leaderCheck is how often the leader proves it still holds its lock (and a
// follower tries to take it): a leader that stops or dies is replaced about
// this long after its connection is gone.
const leaderCheck = time.Second

// Lead runs fn while this node holds the maintenance lock of the store's
// schema: a session-level advisory lock (pg_try_advisory_lock) on a
// connection of its own, so exactly one node runs maintenance, retention
// and periodic jobs at a time. fn's ctx ends when ctx ends, when the store
// closes, or when the lock's connection is lost (the server would have
// released the lock: another node may hold it now); fn should then return
// promptly. A node that does not hold the lock tries again every second, so
// leadership moves within a few seconds of the leader stopping or dying
// (PostgreSQL releases a session lock when its connection ends). Lead
// returns when ctx ends or the store closes, after fn returned.
func (s *Store) Lead(ctx context.Context, log zerolog.Logger, fn func(ctx context.Context)) {
	if err := s.enter(); err != nil {
		return
	}
	s.bgWG.Add(1)
	s.leave()
	defer s.bgWG.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // Close ends leadership too
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()

	log = log.With().Str("schema", s.schema).Logger()
	key := lockKey("leader", s.schema)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	failures := 0
	for ctx.Err() == nil {
		if conn == nil || conn.IsClosed() {
			c, err := pgx.ConnectConfig(ctx, s.ownConnConfig("queue leader"))
			if err != nil {
				if ctx.Err() == nil && failures%30 == 0 {
					log.Warn().Err(err).Msg("maintenance lock: cannot connect; retrying")
				}
				failures++
				sleep(ctx, leaderCheck)
				continue
			}
			conn, failures = c, 0
		}
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
			if ctx.Err() == nil {
				log.Warn().Err(err).Msg("maintenance lock: try failed")
			}
			conn.Close(context.Background())
			conn = nil
			sleep(ctx, leaderCheck)
			continue
		}
		if !got {
			sleep(ctx, leaderCheck)
			continue
		}
		log.Info().Uint32("backend_pid", conn.PgConn().PID()).Msg("maintenance leader")
		lost := s.holdLead(ctx, conn, fn)
		if lost != nil {
			log.Warn().Err(lost).Msg("maintenance leadership lost; another node may take over")
			conn.Close(context.Background())
			conn = nil
			sleep(ctx, leaderCheck)
			continue
		}
		// ctx ended: give the lock back at once, so another node takes over
		// without waiting for this connection to close.
		uctx, ucancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, key)
		ucancel()
		log.Info().Msg("maintenance leadership released")
	}
}

// holdLead runs fn while the lock's connection answers; it returns nil when
// ctx ended, or the error that showed the connection (and so the lock) lost.
func (s *Store) holdLead(ctx context.Context, conn *pgx.Conn, fn func(ctx context.Context)) error {
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(lctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	t := time.NewTicker(leaderCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
