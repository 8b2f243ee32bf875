package ui

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	assets "github.com/queuehq/queue/embed"
)

// openapiRoutes adds GET /api/openapi.json (issue 27): the OpenAPI 3.1
// document of every route this router serves, every request body and
// every answer, errors included (embed/openapi.json; generated and checked
// by the ui tests, see openapi_doc_test.go). It is an /api/ route like the
// others: with tokens it needs one (any role reads it), since SPEC section
// 4 puts every /api/ request behind the tokens and the document, though it
// holds no data, says which routes and fields this server has. Generators
// read it from a file fetched with a token, or straight from a server
// without tokens.
func (h *handler) openapiRoutes(api *echo.Group) {
	doc := sync.OnceValue(func() []byte { return openapiDocument(h.opts.Version) })
	api.GET("/openapi.json", func(c echo.Context) error {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, doc())
	})
}

// openapiVersion is info.version of the embedded document, which the
// server's version replaces when it has one: the document describes the
// API of this build.
const openapiVersion = `"version": "dev"`

// openapiDocument is the embedded document with version as info.version.
func openapiDocument(version string) []byte {
	if version == "" {
		return assets.OpenAPI
	}
	v, _ := json.Marshal(version)
	return bytes.Replace(assets.OpenAPI, []byte(openapiVersion), append([]byte(`"version": `), v...), 1)
}
