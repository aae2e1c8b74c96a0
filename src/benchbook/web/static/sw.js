// benchbook's service worker: keeps the app's shell (the page, its modules and the vendored
// libraries) so the app opens without the server; API answers always come from the server
// (network only: the database is the truth, and the status bar says when it cannot be reached).
const CACHE = "benchbook-shell-v1";

self.addEventListener("install", (event) => { self.skipWaiting(); });
self.addEventListener("activate", (event) => { event.waitUntil(self.clients.claim()); });

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  if (!(url.pathname === "/" || url.pathname.startsWith("/static/"))) return;
  // Network first (an upgrade shows at once), the kept copy when the server cannot be reached.
  event.respondWith(fetch(event.request).then((response) => {
    if (response.ok) {
      const copy = response.clone();
      caches.open(CACHE).then((cache) => cache.put(event.request, copy));
    }
    return response;
  }).catch(() => caches.match(event.request).then((hit) => hit || Response.error())));
});
