// Package mirror serves local files with the routes and headers of the
// Hugging Face Hub that drama and huggingface_hub use, so that one host can
// fetch a checkpoint once and serve it to others, an air-gapped site can
// mirror the Hub, and every download test runs on loopback. It owns the
// sources (a directory of commits, a Hugging Face cache), the routes, the
// CDN listener's signed URLs, the Host guard and the injected faults.
//
// The routes, what each answers, what is served to whom and the faults:
// docs/fetch.md ("drama mirror serve" and "Internals").
package mirror
