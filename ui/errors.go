package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// apiError is the JSON error body: {"error": {"code": "...", "message": "..."}}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// toAPIError picks the status and code of err once, for every handler:
// SPEC section 4 lists them. Anything unknown is a 500 whose detail goes to
// the log, never to the client.
func toAPIError(err error) (*apiError, bool) {
	var ae *apiError
	var ie *app.InvalidError
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae, true
	case errors.As(err, &ie):
		if ie.TooLarge {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: ie.Error(), Field: ie.Field}, true
		}
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_field", Message: ie.Error(), Field: ie.Field}, true
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, "too_large", "request body is larger than %d bytes", mbe.Limit), true
	case errors.Is(err, app.ErrNotFound):
		return newError(http.StatusNotFound, "not_found", "%s", message(err)), true
	case errors.Is(err, app.ErrLeaseLost):
		return newError(http.StatusConflict, "lease_lost", "%s: the lease is stale (the job was recovered, finished or claimed again); nothing was changed", message(err)), true
	case errors.Is(err, app.ErrIllegalTransition), errors.Is(err, app.ErrInvalidStatus):
		return newError(http.StatusConflict, "illegal_transition", "%s", message(err)), true
	case errors.Is(err, app.ErrIdempotencyConflict):
		return newError(http.StatusConflict, "idempotency_conflict", "%s", message(err)), true
	case errors.Is(err, app.ErrOnceHeld):
		return newError(http.StatusConflict, "once_held", "%s", message(err)), true
	case errors.Is(err, app.ErrQueueFull):
		return newError(http.StatusTooManyRequests, "queue_full", "%s", message(err)), true
	case errors.Is(err, app.ErrLiveFilterRequired):
		return newError(http.StatusBadRequest, "filter_required", "a bulk action on jobs needs ids, a queue, kind, tag, key, workflow, replayed_from, a payload field or error text, or \"allow_all\": true (status and the time ranges only narrow it)"), true
	case errors.Is(err, app.ErrFilterRequired):
		return newError(http.StatusBadRequest, "filter_required", "a bulk action needs ids, a queue, kind or tag, or \"allow_all\": true (reason, older_than, moved_after and moved_before only narrow it)"), true
	case errors.Is(err, app.ErrTooManyWaiters):
		return newError(http.StatusServiceUnavailable, "unavailable", "the server holds as many waiting requests as it allows (server.max_waiters); try again shortly"), true
	case errors.Is(err, app.ErrUnavailable):
		return newError(http.StatusServiceUnavailable, "unavailable", "the store is unavailable; try again shortly"), true
	case errors.As(err, &he):
		return fromEchoError(he), true
	}
	return newError(http.StatusInternalServerError, "internal", "internal error; see the server log"), false
}

// message is what a client is told of err: app.UserMessage, which leaves
// out the operations it went through inside the server (app.OperationError).
func message(err error) string { return app.UserMessage(err) }

func fromEchoError(he *echo.HTTPError) *apiError {
	msg := fmt.Sprint(he.Message)
	switch he.Code {
	case http.StatusNotFound:
		return newError(he.Code, "not_found", "no such route")
	case http.StatusMethodNotAllowed:
		return newError(he.Code, "method_not_allowed", "method not allowed on this route")
	case http.StatusRequestEntityTooLarge:
		return newError(he.Code, "too_large", "request body is too large")
	case http.StatusUnauthorized:
		return newError(he.Code, "unauthorized", "%s", msg)
	case http.StatusForbidden:
		return newError(he.Code, "forbidden", "%s", msg)
	case http.StatusUnsupportedMediaType:
		return newError(he.Code, "unsupported_media_type", "%s", msg)
	}
	if he.Code >= 400 && he.Code < 500 {
		return newError(he.Code, "invalid_request", "%s", msg)
	}
	return newError(http.StatusServiceUnavailable, "unavailable", "%s", msg)
}

// busyError is a 503 for a cap a client reached (event streams): expected
// under load and sent by clients at will, so not logged as a failure.
type busyError struct{ *apiError }

func (b *busyError) Unwrap() error { return b.apiError }

// errorHandler is echo's HTTPErrorHandler: every error leaves as JSON (API)
// or as a plain page (UI), and a 500's detail stays in the log.
func (h *handler) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if hungUp(c, err) {
		h.log.Debug().Err(err).Str("method", c.Request().Method).Str("path", c.Request().URL.Path).Msg("client hung up")
		return
	}
	ae, known := toAPIError(err)
	var busy *busyError
	if (!known || ae.Status >= 500) && !errors.Is(err, app.ErrTooManyWaiters) && !errors.As(err, &busy) {
		h.log.Error().Err(err).Str("method", c.Request().Method).Str("path", c.Request().URL.Path).Msg("request failed")
	}
	if (ae.Status == http.StatusTooManyRequests || ae.Status == http.StatusServiceUnavailable) && c.Response().Header().Get("Retry-After") == "" {
		c.Response().Header().Set("Retry-After", "1")
	}
	var d *denial
	if errors.As(err, &d) {
		h.auditDenied(c)
	}
	if !isAPI(c) && h.pages != nil {
		h.pages.errorPage(c, ae)
		return
	}
	if c.Request().Method == http.MethodHead {
		c.NoContent(ae.Status)
		return
	}
	c.JSON(ae.Status, map[string]*apiError{"error": ae})
}

// hungUp reports whether err ended the request because its client went
// away (closed the connection during a long poll or a slow read): nothing
// failed on the server, and no one is left to answer.
func hungUp(c echo.Context, err error) bool {
	return c.Request().Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

func isAPI(c echo.Context) bool {
	p := c.Request().URL.Path
	return strings.HasPrefix(p, "/api/") || p == "/api" || p == "/healthz" || p == "/readyz" || p == "/metrics"
}

// decodeError turns a JSON decoding error into the API's 400/413 answers.
func decodeError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return newError(http.StatusBadRequest, "invalid_json", "request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newError(http.StatusBadRequest, "invalid_json", "request body is truncated JSON")
	case errors.As(err, &se):
		return newError(http.StatusBadRequest, "invalid_json", "request body is not valid JSON (offset %d): %s", se.Offset, se.Error())
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return newError(http.StatusBadRequest, "invalid_json", "request body must be a JSON object, not %s", te.Value)
		}
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_field", Field: field,
			Message: fmt.Sprintf("%s: want %s, got %s", field, jsonType(te.Type.String()), te.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_field", Field: f, Message: fmt.Sprintf("unknown field %q", f)}
	}
	var ie *app.InvalidError
	if errors.As(err, &ie) {
		return err
	}
	return newError(http.StatusBadRequest, "invalid_field", "%s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonType(goType string) string {
	switch {
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.Contains(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool", goType == "*bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.Contains(goType, "Time"):
		return "an RFC 3339 time"
	case strings.Contains(goType, "Duration"):
		return "a duration like \"30s\", \"5m\" or \"7d\", or a number of seconds"
	}
	return "a " + strings.TrimPrefix(goType, "*")
}
