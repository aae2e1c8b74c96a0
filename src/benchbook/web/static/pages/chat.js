// The assistant (#/assistant): a chat with the configured model, which answers with the API's
// read tools (each call shown with its arguments and result, folded); the model settings
// (provider, model, base URL; the key entered once, only its hint shown back) and the token usage.
// The server keeps no conversation: the whole one is sent with each message.
import { html, useState, useRef, useEffect } from "../lib/html.js";
import { get, post, patch } from "../lib/api.js";
import { useLoad, useAction, Loading, ErrorBox, Field, notify, useTitle, formatCount, ScrollRegion } from "../lib/ui.js";
import { counted } from "../lib/counting.js";

// The server's 409 for a chat without a model or key names the API call that sets them; on this
// page the model settings below are where, and the warning above says so instead.
const unset = (error) => Boolean(error && error.status === 409 && /no AI model is configured|no API key/.test(error.message || ""));
const PROVIDERS = [["openai", "OpenAI-compatible server"], ["local", "Local model server (no key)"], ["router", "Hosted model router"]];

function Config({ config, onSaved }) {
  const [form, setForm] = useState({ provider: config.provider || "openai", model: config.model || "", base_url: config.base_url || "", api_key: "" });
  const save = useAction((body) => patch("/ai/config", body));
  const errors = save.error && save.error.fieldErrors ? save.error.fieldErrors() : {};
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  const submit = async (e) => {
    e.preventDefault();
    const body = { provider: form.provider, model: form.model.trim() };
    const url = form.base_url.trim();
    // An address left as shown stays as it is, unless the provider changed: then its default.
    if (url !== (config.base_url || "")) body.base_url = url;
    else if (form.provider !== config.provider) body.base_url = "";
    if (form.api_key) body.api_key = form.api_key;
    const saved = await save.run(body);
    if (saved) { notify("Model settings saved", "ok"); onSaved(saved); }
  };
  const forget = async () => {
    const saved = await save.run({ api_key: "" });
    if (saved) { notify("Key removed", "ok"); onSaved(saved); }
  };
  const shown = Object.values(errors).some(Boolean);
  return html`<form class="card" aria-label="Model settings" onSubmit=${submit}>
    <h2>Model</h2>
    <p class="muted">${config.configured ? "The assistant is ready." : "Set a model (and, unless it is a local server, a key) to chat."}
      ${config.source === "environment" ? " The key in use comes from BENCHBOOK_AI_KEY." : ""}</p>
    <div class="form-row">
      <${Field} label="Provider" error=${errors.provider}>${(id, d) => html`<select id=${id} aria-describedby=${d} value=${form.provider} onChange=${set("provider")}>
        ${PROVIDERS.map(([v, l]) => html`<option value=${v} selected=${v === form.provider}>${l}</option>`)}</select>`}<//>
      <${Field} label="Model name" error=${errors.model}>${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.model}
        autocomplete="off" spellcheck="false" onInput=${set("model")} />`}<//>
      <${Field} label="Base URL" error=${errors.base_url} hint="Empty: the provider's default address.">${(id, d) => html`<input id=${id}
        aria-describedby=${d} type="url" value=${form.base_url} autocomplete="off" spellcheck="false" onInput=${set("base_url")} />`}<//>
    </div>
    <${Field} label="API key" error=${errors.api_key} hint=${config.key_hint ? "Type a new key only to replace the one set." : "Stored by the server and never shown again."}>
      ${(id, d) => html`<input id=${id} aria-describedby=${d} type="password" autocomplete="off" value=${form.api_key} onInput=${set("api_key")} />`}<//>
    <p data-testid="key-hint">${config.key_hint ? html`Key: set, ending in <code>${config.key_hint}</code>.` : "No key set."}</p>
    <${ErrorBox} error=${save.error && !shown ? save.error : null} />
    <div class="toolbar">
      <button type="submit" class="primary" disabled=${save.busy}>Save model settings</button>
      ${config.key_hint ? html`<button type="button" class="danger" disabled=${save.busy} onClick=${forget}>Remove the key</button>` : null}
    </div>
  </form>`;
}

function show(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function Message({ m }) {
  if (m.role === "tool_call") {
    const args = m.arguments && typeof m.arguments === "object" ? Object.keys(m.arguments).length : m.arguments;
    return html`<li class=${"msg tool" + (m.is_error ? " error" : "")} data-testid="tool-call"><details>
      <summary>Tool call <code>${m.name}</code>${args ? html` <span class="muted">with ${typeof args === "number" ? counted(args, "argument") : "arguments"}</span>` : null}
        ${m.is_error ? html` <strong>(refused)</strong>` : null}${m.truncated ? html` <span class="muted">(result cut)</span>` : null}</summary>
      <h3 class="sr-only">Call of ${m.name}</h3>
      <p><strong>Arguments</strong></p><pre data-testid="tool-arguments" tabindex="0" role="region" aria-label=${`Arguments of ${m.name}`}>${show(m.arguments ?? {})}</pre>
      <p><strong>Result</strong></p><pre data-testid="tool-result" tabindex="0" role="region" aria-label=${`Result of ${m.name}`}>${show(m.result)}</pre></details></li>`;
  }
  return html`<li class=${"msg " + m.role}><span class="who">${m.role === "user" ? "You" : "Assistant"}:</span> ${m.content}</li>`;
}

function answerUsage({ usage, stop_reason: stop }) {
  const requests = counted(usage.requests, "model request");
  const tokens = `${counted(usage.input_tokens, "token")} in, ${formatCount(usage.output_tokens)} out`;
  return `This answer: ${requests}, ${tokens}${stop === "max_rounds" ? " (stopped: too many tool rounds)" : ""}.`;
}

function Chat({ configured, onAnswered }) {
  const [messages, setMessages] = useState([]);
  const [text, setText] = useState("");
  const [last, setLast] = useState(null);
  const end = useRef(null);
  const send = useAction(async (conversation) => {
    const r = await post("/ai/chat", { messages: conversation });
    setMessages([...conversation, ...r.messages]);
    setLast(r);
    onAnswered();
    return r;
  });
  useEffect(() => { if (end.current && messages.length) end.current.scrollIntoView({ block: "nearest" }); }, [messages.length, send.busy]);
  const submit = (e) => {
    e.preventDefault();
    if (!text.trim() || send.busy) return;
    const conversation = [...messages, { role: "user", content: text.trim() }];
    setMessages(conversation);
    setText("");
    setLast(null);
    send.run(conversation).then((r) => { if (!r) onAnswered(); });
  };
  return html`<section class="card" aria-labelledby="chat-h"><h2 id="chat-h">Chat</h2>
    ${!configured ? html`<p class="warn-box" role="status">No model is set yet: fill in the model settings below (provider,
      model name and, unless it is a local server, a key), then send.</p>` : null}
    ${messages.length ? html`<ol class="chat-log" aria-label="Conversation">${messages.map((m, i) => html`<${Message} key=${i} m=${m} />`)}</ol>`
      : html`<p class="muted">Ask about your collections, schemas and records; the model reads them through the API's tools.</p>`}
    <div aria-live="polite">
      ${send.busy ? html`<${Loading} label="The model is answering…" />` : null}
      ${last ? html`<p class="muted" data-testid="chat-usage">${answerUsage(last)}</p>` : null}
    </div>
    <${ErrorBox} error=${unset(send.error) ? null : send.error} onRetry=${() => send.run(messages)}><p>The message was not answered; retry sends the conversation again.</p><//>
    <form class="chat-form" aria-label="Message" onSubmit=${submit} ref=${end}>
      <${Field} label="Ask about your data" hint="Ctrl+Enter sends.">${(id, d) => html`<textarea id=${id} aria-describedby=${d} rows="3" value=${text}
        onInput=${(e) => setText(e.target.value)} onKeyDown=${(e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) submit(e); }}></textarea>`}<//>
      <div class="toolbar"><button type="submit" class="primary" disabled=${send.busy || !text.trim()}>Send</button>
        ${messages.length ? html`<button type="button" disabled=${send.busy} onClick=${() => { setMessages([]); setLast(null); send.clear(); }}>New conversation</button>` : null}</div>
    </form>
  </section>`;
}

function Usage({ usage }) {
  return html`<section class="card" aria-labelledby="usage-h" aria-busy=${usage.loading ? "true" : "false"}><h2 id="usage-h">Usage</h2>
    <${ErrorBox} error=${usage.error} onRetry=${usage.reload} />
    ${!usage.data ? (usage.loading ? html`<${Loading} />` : null) : html`
      <p data-testid="usage-total">${[counted(usage.data.total.requests, "model request"),
        `${counted(usage.data.total.input_tokens, "token")} in`, `${counted(usage.data.total.output_tokens, "token")} out (all time)`].join(" · ")}</p>
      ${usage.data.by_model.length ? html`<${ScrollRegion} label="Usage by model (scrolls)"><table class="grid usage-table" aria-label="Usage by model">
        <thead><tr><th scope="col">Provider</th><th scope="col">Model</th><th scope="col" class="num">Requests</th>
          <th scope="col" class="num">Tokens in</th><th scope="col" class="num">Tokens out</th></tr></thead>
        <tbody>${usage.data.by_model.map((m) => html`<tr><td>${m.provider}</td><td>${m.model}</td><td class="num">${formatCount(m.requests)}</td>
          <td class="num">${formatCount(m.input_tokens)}</td><td class="num">${formatCount(m.output_tokens)}</td></tr>`)}</tbody>
      </table><//>` : null}
      <p><a href="#/analytics">Tokens over time in Analytics</a></p>`}
  </section>`;
}

export default function Assistant() {
  useTitle("Assistant");
  const config = useLoad((signal) => get("/ai/config", {}, { signal }), []);
  const usage = useLoad((signal) => get("/ai/usage", {}, { signal }), []);
  return html`<section class="page assistant">
    <div class="page-head"><h1>Assistant</h1></div>
    <p class="muted">The assistant reads your data only through the same API the app uses.</p>
    <${ErrorBox} error=${config.error} onRetry=${config.reload} />
    ${config.data ? html`<${Chat} configured=${config.data.configured} onAnswered=${usage.reload} />
      <${Config} key=${JSON.stringify(config.data)} config=${config.data} onSaved=${(c) => config.setData(c)} />`
      : config.loading ? html`<${Loading} />` : null}
    <${Usage} usage=${usage} />
  </section>`;
}
