// benchbook web app: the shell (navigation, the page for the location hash, the status bar).
// Each page is its own module under pages/, loaded when first visited; a page that fails to load
// or to render shows its error in place and the rest of the app stays usable.
import { html, render, useEffect, useState, Component } from "./lib/html.js";
import { useLocation, match, href } from "./lib/router.js";
import { ErrorBox, Loading } from "./lib/ui.js";
import { StatusBar } from "./lib/status.js";

// [hash path pattern, page module]; the first match wins.
export const ROUTES = [
  ["/", "collections"],
  ["/c/:collection", "records"],
  ["/c/:collection/settings", "collection"],
  ["/c/:collection/import", "import"],
  ["/r/:record", "record"],
  ["/schemas", "schemas"],
  ["/schemas/:schema", "schema"],
  ["/trash", "trash"],
  ["/history", "history"],
  ["/history/storage", "storage"],
  ["/history/batch/:batch", "batch"],
  ["/history/entry/:entry", "entry"],
  ["/automation", "automation"],
  ["/automation/workflows/:workflow", "workflow"],
  ["/automation/runs", "runs"],
  ["/automation/runs/:job", "run"],
  ["/analytics", "charts"],
  ["/assistant", "chat"],
  ["/remote", "remote"],
  ["/remote/conflicts", "conflicts"],
];

const NAV = [
  ["/", "Collections", ["collections", "records", "collection", "import", "record"]],
  ["/schemas", "Schemas", ["schemas", "schema"]],
  ["/history", "History", ["history", "storage", "batch", "entry"]],
  ["/trash", "Recently deleted", ["trash"]],
  ["/automation", "Automation", ["automation", "workflow", "runs", "run"]],
  ["/analytics", "Analytics", ["charts"]],
  ["/assistant", "Assistant", ["chat"]],
  ["/remote", "Sync", ["remote", "conflicts"]],
];

const modules = new Map();
function loadPage(name) {
  if (!modules.has(name)) modules.set(name, import(`./pages/${name}.js`).catch((e) => { modules.delete(name); throw e; }));
  return modules.get(name);
}

class Boundary extends Component {
  constructor(props) { super(props); this.state = { error: null }; }
  componentDidCatch(error) { this.setState({ error }); }
  componentDidUpdate(previous) { if (previous.resetKey !== this.props.resetKey && this.state.error) this.setState({ error: null }); }
  render() {
    if (this.state.error) {
      return html`<${ErrorBox} error=${this.state.error} onRetry=${() => this.setState({ error: null })}>
        <p>This part of the page failed; the rest of the app still works.</p><//>`;
    }
    return this.props.children;
  }
}

function NotFound({ path }) {
  return html`<section class="page"><h1>Nothing here</h1>
    <p>The address <code>#${path}</code> names no page of benchbook.</p>
    <p><a href=${href("/")}>Go to the collections</a></p></section>`;
}

function Page({ location }) {
  const found = match(ROUTES, location.path);
  const [loaded, setLoaded] = useState({ name: null, module: null, error: null });
  const name = found && found.page;
  useEffect(() => {
    if (!name) return;
    let live = true;
    loadPage(name).then((module) => live && setLoaded({ name, module, error: null }),
      (error) => live && setLoaded({ name, module: null, error }));
    return () => { live = false; };
  }, [name]);
  if (!found) return html`<${NotFound} path=${location.path} />`;
  if (loaded.name !== name) return html`<${Loading} />`;
  if (loaded.error) return html`<${ErrorBox} error=${new Error(`The ${name} page could not be loaded (${loaded.error.message}).`)} />`;
  const View = loaded.module.default;
  return html`<${Boundary} resetKey=${location.path}><${View} params=${found.params} query=${location.query} path=${location.path} /><//>`;
}

function Shell() {
  const location = useLocation();
  const found = match(ROUTES, location.path);
  const current = found ? found.page : null;
  useEffect(() => {
    const onKey = (e) => {
      const target = e.target;
      const typing = target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
      if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        const search = document.querySelector("[data-search]") || document.querySelector("main input[type=search]");
        if (search) { e.preventDefault(); search.focus(); search.select && search.select(); }
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
  useEffect(() => { const main = document.getElementById("main"); if (main) main.scrollTop = 0; }, [location.path]);
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById("main").focus(); }}>Skip to content</a>
    <header class="top">
      <a class="brand" href=${href("/")}>benchbook</a>
      <nav aria-label="Main">
        <ul>${NAV.map(([path, label, pages]) => html`<li><a href=${href(path)}
          aria-current=${pages.includes(current) ? "page" : undefined}>${label}</a></li>`)}</ul>
      </nav>
      <a class="api-docs" href="/docs/">API docs</a>
    </header>
    <main id="main" tabindex="-1"><${Page} location=${location} /></main>
    <${StatusBar} />`;
}

const root = document.getElementById("app");
root.textContent = "";
render(html`<${Shell} />`, root);

if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("/sw.js").catch(() => { /* without it the app works, only not offline */ });
}
