package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sessions makes and checks the login cookie of the pages. The cookie is
// never the token: it is "name.expiry.id.mac", signed with a key derived
// from the token it was made with, so any node configured with that token
// accepts it (several nodes behind one load balancer), changing the token
// ends every session made with it, and it stops working at its expiry.
// Logout revokes the id on the node that served it (kept in memory until
// the session would have expired; the browser drops the cookie too).
type sessions struct {
	tokens []Token
	maxAge time.Duration

	mu      sync.Mutex
	revoked map[string]time.Time // session id -> its expiry
}

// maxRevoked bounds the revocation list: past it, the oldest entries whose
// sessions have expired are dropped first, then any (a flood of logouts
// needs a valid session each, so this is a limit on a token holder).
const maxRevoked = 100000

func newSessions(tokens []Token, maxAge time.Duration) *sessions {
	return &sessions{tokens: tokens, maxAge: maxAge, revoked: map[string]time.Time{}}
}

// sessionKey is the signing key of sessions made with t.
func sessionKey(t Token) []byte {
	m := hmac.New(sha256.New, []byte(t.Secret))
	m.Write([]byte("queue session v1"))
	return m.Sum(nil)
}

func sign(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// issue returns a new cookie value for token t.
func (s *sessions) issue(t Token, now time.Time) string {
	var id [18]byte
	if _, err := rand.Read(id[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	body := base64.RawURLEncoding.EncodeToString([]byte(t.Name)) + "." +
		strconv.FormatInt(now.Add(s.maxAge).Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(id[:])
	return body + "." + sign(sessionKey(t), body)
}

// parse splits a cookie value and checks its signature and expiry; it
// returns the token it was made with and the session's id and expiry.
func (s *sessions) parse(v string, now time.Time) (Token, string, time.Time, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 4 || len(v) > 512 {
		return Token{}, "", time.Time{}, false
	}
	name, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return Token{}, "", time.Time{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return Token{}, "", time.Time{}, false
	}
	body := parts[0] + "." + parts[1] + "." + parts[2]
	for _, t := range s.tokens {
		if t.Name != string(name) {
			continue
		}
		if hmac.Equal([]byte(sign(sessionKey(t), body)), []byte(parts[3])) {
			return t, parts[2], time.Unix(exp, 0), true
		}
	}
	return Token{}, "", time.Time{}, false
}

// verify returns who a cookie value logs in, or nil.
func (s *sessions) verify(v string, now time.Time) *principal {
	t, id, _, ok := s.parse(v, now)
	if !ok {
		return nil
	}
	s.mu.Lock()
	_, gone := s.revoked[id]
	s.mu.Unlock()
	if gone {
		return nil
	}
	p := tokenPrincipal(t)
	p.session = true
	return p
}

// revoke ends the session of cookie value v, if it is a valid one.
func (s *sessions) revoke(v string, now time.Time) {
	_, id, exp, ok := s.parse(v, now)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.revoked) >= maxRevoked {
		for k, e := range s.revoked {
			if !now.Before(e) {
				delete(s.revoked, k)
			}
		}
		for k := range s.revoked {
			if len(s.revoked) < maxRevoked {
				break
			}
			delete(s.revoked, k)
		}
	}
	s.revoked[id] = exp
}
