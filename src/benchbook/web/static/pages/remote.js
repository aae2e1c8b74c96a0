// Sync (#/remote; docs/sync.md): the authority this project follows (address, device name, last
// sync, changes waiting, open conflicts, the last error) with Sync now and Disconnect, or the form
// that connects it to one; and, for a project devices follow or may follow (any project that
// follows none), its devices with Invite device (the invite shown once) and Revoke.
import { html, useState, useRef } from "../lib/html.js";
import { get, post, enc, ApiError } from "../lib/api.js";
import { href } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Field, Confirm, notify, useTitle, formatTime, formatCount } from "../lib/ui.js";
import { pokeStatus } from "../lib/status.js";
import { summaryWords, SyncError } from "../lib/sync.js";
import { counted } from "../lib/counting.js";

// What one sync moved, shown after Sync now or Connect, with a link to new conflicts.
function Summary({ summary, onClose }) {
  if (!summary) return null;
  return html`<div class="ok-box sync-summary" role="status" data-testid="sync-summary">
    <p>${summaryWords(summary)}
      ${summary.conflicts || summary.rejected ? html` <a href=${href("/remote/conflicts")}>See the conflicts</a>` : null}
      ${" "}<button type="button" class="link" onClick=${onClose}>Hide</button></p>
  </div>`;
}

// The authority this project follows: its address, this device's name, last sync, what waits,
// with Sync now (its summary shown) and Disconnect behind a confirmation.
function Following({ remote, reload, summary, setSummary }) {
  const [asking, setAsking] = useState(false);
  const sync = useAction(async () => {
    try {
      const done = await post("/remote/sync");
      setSummary(done);
      notify("Synced", "ok");
      return done;
    } finally { pokeStatus(); reload(); }
  });
  return html`<section aria-labelledby="following-h">
    <h2 id="following-h">This project follows an authority</h2>
    <dl class="props" data-testid="remote">
      <dt>Authority</dt><dd><a href=${remote.url} rel="noopener">${remote.url}</a></dd>
      <dt>This device's name</dt><dd>${remote.device}</dd>
      <dt>Last sync</dt><dd data-testid="last-sync">${remote.last_sync_at ? formatTime(remote.last_sync_at) : "not yet"}</dd>
      <dt>Changes waiting to be sent</dt><dd data-testid="pending">${formatCount(remote.pending)}</dd>
      <dt>Open conflicts</dt><dd data-testid="open-conflicts">${remote.open_conflicts
        ? html`<a href=${href("/remote/conflicts")}>${counted(remote.open_conflicts, "open conflict")}</a>` : "none"}</dd>
    </dl>
    ${remote.connected ? null : html`<p class="warn-box" role="status">This project holds no device token for the authority
      (the <code>.sync-token</code> file is missing): disconnect, then connect again with a new invite.</p>`}
    ${remote.error && !sync.error ? html`<div class="warn-box" role="status" data-testid="remote-error">
      <strong>The last sync failed:</strong> ${remote.error}</div>` : null}
    <div class="toolbar">
      <button type="button" class="primary" disabled=${sync.busy} onClick=${() => { setSummary(null); sync.run(); }}>
        ${sync.busy ? "Syncing…" : "Sync now"}</button>
      <button type="button" class="danger" onClick=${() => setAsking(true)}>Disconnect…</button>
    </div>
    <${SyncError} what="The sync failed" error=${sync.error} />
    <${Summary} summary=${summary} onClose=${() => setSummary(null)} />
    ${asking ? html`<${Confirm} title="Stop following the authority?" danger=${true} confirmLabel="Disconnect"
      message=${html`<p>This project stops syncing with ${remote.url}. Its data, history and the
        ${counted(remote.pending, "change")} not yet sent stay here. Following an authority again later needs
        a new invite, and either this project or the authority empty.</p>`}
      onClose=${() => setAsking(false)}
      onConfirm=${async () => { await post("/remote/disconnect"); notify("Disconnected", "ok"); setSummary(null); pokeStatus(); reload(); return true; }} />` : null}
  </section>`;
}

// Follow an authority: its address and a one-use invite (POST /remote/connect); errors in plain words.
function ConnectForm({ reload, setSummary }) {
  const [url, setUrl] = useState("");
  const [invite, setInvite] = useState("");
  const connect = useAction(() => post("/remote/connect", { url: url.trim(), invite: invite.trim() }));
  const errors = connect.error instanceof ApiError ? connect.error.fieldErrors() : {};
  if (errors.url) errors.url = "The authority's address starts with http:// or https://, as in http://127.0.0.1:8765.";
  const placed = errors.url || errors.invite;
  return html`<section aria-labelledby="connect-h">
    <h2 id="connect-h">Follow an authority</h2>
    <p class="muted">Connect this project to the lab's copy (the authority) as a device, with the one-use invite
      its admin made for you. An empty project copies the authority; a project holding data fills an empty authority.</p>
    <form class="connect-form" onSubmit=${async (e) => {
      e.preventDefault();
      const done = await connect.run();
      if (done) { setSummary(done.summary || null); notify("Connected", "ok"); pokeStatus(); reload(); }
    }}>
      <${Field} label="Authority's address" error=${errors.url} hint="The address the authority is served at, without /api.">
        ${(id, describedBy) => html`<input id=${id} type="url" required placeholder="http://127.0.0.1:8765" value=${url}
          aria-describedby=${describedBy} onInput=${(e) => setUrl(e.target.value)} />`}<//>
      <${Field} label="Invite" error=${errors.invite} hint="Starts with bbi_; usable once, within 24 hours of being made.">
        ${(id, describedBy) => html`<input id=${id} required autocomplete="off" spellcheck=${false} value=${invite}
          aria-describedby=${describedBy} onInput=${(e) => setInvite(e.target.value)} />`}<//>
      <${SyncError} what="Could not connect" error=${placed ? null : connect.error} />
      <div class="toolbar"><button type="submit" class="primary" disabled=${connect.busy}>
        ${connect.busy ? "Connecting and copying…" : "Connect"}</button></div>
    </form>
  </section>`;
}

const STATES = { invited: "invited, not joined yet", joined: "joined", revoked: "revoked", expired: "invite expired" };

// The invite just made, shown this once, with a copy button.
function InviteShown({ made, onClose }) {
  const input = useRef(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(made.invite);
      notify("Invite copied", "ok");
    } catch {
      if (input.current) { input.current.focus(); input.current.select(); }
      notify("The browser refused to copy: the invite is selected, copy it with Ctrl+C", "error");
    }
  };
  return html`<div class="ok-box invite-made" role="status" data-testid="invite">
    <p>Invite for <strong>${made.name}</strong>, usable once until ${formatTime(made.expires_at)}.
      It is shown only now: copy it and give it to the device's owner.</p>
    <div class="invite-row">
      <label class="sr-only" for="invite-code">Invite for ${made.name}</label>
      <input id="invite-code" ref=${input} readonly value=${made.invite} onFocus=${(e) => e.target.select()} />
      <button type="button" onClick=${copy}>Copy invite</button>
      <button type="button" class="link" onClick=${onClose}>Done</button>
    </div>
    <p>On the device: Sync → Follow an authority, with the address <code>${location.origin}</code> and this invite
      (or <code>benchbook remote connect</code>).</p>
  </div>`;
}

// This project's devices (name, state, joined, last seen) with Revoke, and the Invite device form.
function Devices({ devices, reload }) {
  const [name, setName] = useState("");
  const [made, setMade] = useState(null);
  const [revoking, setRevoking] = useState(null);
  const create = useAction(() => post("/sync/devices", { name: name.trim() }));
  const nameError = create.error instanceof ApiError && create.error.status === 422
    ? "A device name is letters, digits, '.', '_' or '-', starting with a letter or digit." : null;
  return html`<section aria-labelledby="devices-h">
    <h2 id="devices-h">Devices that follow this project</h2>
    ${devices.length ? html`<div class="table-wrap"><table class="grid" aria-labelledby="devices-h">
      <thead><tr><th scope="col">Device</th><th scope="col">State</th><th scope="col">Joined</th><th scope="col">Last seen</th>
        <th scope="col"><span class="sr-only">actions</span></th></tr></thead>
      <tbody>${devices.map((d) => html`<tr key=${d.name} data-device=${d.name}>
        <td>${d.name}</td><td>${STATES[d.state] || d.state}</td><td>${formatTime(d.joined_at)}</td><td>${formatTime(d.last_seen_at)}</td>
        <td>${d.state === "revoked" ? null : html`<button type="button" class="danger"
          aria-label=${"Revoke " + d.name} onClick=${() => setRevoking(d.name)}>Revoke…</button>`}</td></tr>`)}</tbody>
    </table></div>` : html`<p class="muted">No device follows this project yet. Any project that follows no authority can
      be one: invite a device, and this project becomes the lab's authority.</p>`}
    <form class="form-row invite-form" aria-label="Invite a device" onSubmit=${async (e) => {
      e.preventDefault();
      const done = await create.run();
      if (done) { setMade(done); setName(""); reload(); }
    }}>
      <${Field} label="New device's name" error=${nameError} hint="Stamped on the changes it makes, e.g. laptop or field-tablet.">
        ${(id, describedBy) => html`<input id=${id} required maxlength="100" autocomplete="off" value=${name}
          aria-describedby=${describedBy} onInput=${(e) => setName(e.target.value)} />`}<//>
      <div class="field"><button type="submit" class="primary" disabled=${create.busy}>Invite device</button></div>
    </form>
    <${SyncError} what="Could not invite the device" error=${nameError ? null : create.error} />
    ${made ? html`<${InviteShown} made=${made} onClose=${() => setMade(null)} />` : null}
    ${revoking ? html`<${Confirm} title=${`Revoke ${revoking}?`} danger=${true} confirmLabel="Revoke"
      message=${html`<p>Its next sync is refused. It keeps working offline and keeps its changes not yet sent. The name
        ${revoking} stays taken.</p>`}
      onClose=${() => setRevoking(null)}
      onConfirm=${async () => { await post(`/sync/devices/${enc(revoking)}/revoke`); notify(`Revoked ${revoking}`, "ok"); reload(); return true; }} />` : null}
  </section>`;
}

// The Sync page: following, connecting, and the devices, as the project's state calls for.
export default function Remote() {
  useTitle("Sync");
  const [summary, setSummary] = useState(null);
  const state = useLoad(async (signal) => {
    const [remote, devices] = await Promise.all([get("/remote", {}, { signal }), get("/sync/devices", {}, { signal })]);
    return { remote, devices };
  }, []);
  if (state.loading && !state.data) return html`<${Loading} />`;
  if (!state.data) return html`<section class="page"><h1>Sync</h1><${ErrorBox} error=${state.error} onRetry=${state.reload} /></section>`;
  const { remote, devices } = state.data;
  const following = !!remote.url;
  return html`<section class="page sync-page">
    <div class="page-head"><h1>Sync</h1>
      <span class="muted">${following ? "a device of the lab's authority" : devices.length ? "the lab's authority" : "not syncing"}</span>
      ${following ? html`<div class="actions"><a class="button" href=${href("/remote/conflicts")}>Conflicts</a></div>` : null}</div>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${!following && !devices.length ? html`<p>A project either follows the lab's authority (it is then a device) or is the
      authority itself (devices follow it). Connect it to one, or invite a first device.</p>` : null}
    ${following ? html`<${Following} remote=${remote} reload=${state.reload} summary=${summary} setSummary=${setSummary} />`
      : devices.length ? null : html`<${ConnectForm} reload=${state.reload} setSummary=${setSummary} />`}
    ${!following && summary ? html`<${Summary} summary=${summary} onClose=${() => setSummary(null)} />` : null}
    ${devices.length || !following ? html`<${Devices} devices=${devices} reload=${state.reload} />` : null}
  </section>`;
}
