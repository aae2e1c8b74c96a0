// The assistant (#/assistant): a chat with the configured model, which answers with the API's
// tools (each call shown with its arguments and result, folded); the configuration (provider,
// model, base URL; the key entered once, only its hint shown back) and the token usage.
import { html, useState, useRef, useEffect } from "../lib/html.js";
import { get, post, patch } from "../lib/api.js";
import { useLoad, useAction, Loading, ErrorBox, Field, notify, useTitle, formatCount } from "../lib/ui.js";

const PROVIDERS = [["openai", "OpenAI-compatible server"], ["local", "Local model server"], ["router", "Hosted model router"]];

function Config({ config, onSaved }) {
  const [form, setForm] = useState({ provider: config.provider || "openai", model: config.model || "", base_url: config.base_url || "", api_key: "" });
  const save = useAction(() => patch("/ai/config", { provider: form.provider, model: form.model, base_url: form.base_url || null,
    ...(form.api_key ? { api_key: form.api_key } : {}) }));
  const errors = save.error && save.error.fieldErrors ? save.error.fieldErrors() : {};
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  return html`<form class="card" aria-label="Model settings" onSubmit=${async (e) => { e.preventDefault(); const c = await save.run();
      if (c) { setForm({ ...form, api_key: "" }); notify("Model settings saved", "ok"); onSaved(c); } }}>
    <h2>Model</h2>
    <div class="form-row">
      <${Field} label="Provider" error=${errors.provider}>${(id, d) => html`<select id=${id} aria-describedby=${d} value=${form.provider} onChange=${set("provider")}>
        ${PROVIDERS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select>`}<//>
      <${Field} label="Model name" error=${errors.model}>${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.model} onInput=${set("model")} />`}<//>
      <${Field} label="Base URL" error=${errors.base_url}>${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.base_url} onInput=${set("base_url")} />`}<//>
    </div>
    <${Field} label="API key" error=${errors.api_key} hint=${config.key_hint ? `A key is set (${config.key_hint}); type a new one only to replace it.` : "Stored by the server; never shown again."}>
      ${(id, d) => html`<input id=${id} aria-describedby=${d} type="password" autocomplete="off" value=${form.api_key} onInput=${set("api_key")} />`}<//>
    <p class="muted" data-testid="key-hint">${config.key_hint ? `Key: ${config.key_hint}` : "No key set."}</p>
    <${ErrorBox} error=${save.error && !Object.keys(errors).some(Boolean) ? save.error : null} />
    <button type="submit" class="primary" disabled=${save.busy}>Save model settings</button>
  </form>`;
}

function Message({ m }) {
  if (m.role === "tool_call") {
    return html`<li class="msg tool" data-testid="tool-call"><details><summary>Tool <code>${m.name}</code>${m.is_error ? html` <span class="error">(error)</span>` : ""}</summary>
      <p><strong>Arguments</strong></p><pre>${JSON.stringify(m.arguments, null, 2)}</pre>
      <p><strong>Result</strong></p><pre>${JSON.stringify(m.result, null, 2)}</pre></details></li>`;
  }
  return html`<li class=${"msg " + m.role}><span class="sr-only">${m.role === "user" ? "You" : "Assistant"}: </span>${m.content}</li>`;
}

function Chat({ configured }) {
  const [messages, setMessages] = useState([]);
  const [text, setText] = useState("");
  const end = useRef(null);
  const send = useAction(async (conversation) => {
    const r = await post("/ai/chat", { messages: conversation });
    setMessages([...conversation, ...r.messages]);
    return r;
  });
  useEffect(() => { if (end.current) end.current.scrollIntoView({ block: "nearest" }); }, [messages.length, send.busy]);
  const submit = (e) => {
    e.preventDefault();
    if (!text.trim()) return;
    const conversation = [...messages, { role: "user", content: text.trim() }];
    setMessages(conversation);
    setText("");
    send.run(conversation);
  };
  return html`<section class="card" aria-labelledby="chat-h"><h2 id="chat-h">Chat</h2>
    ${!configured ? html`<p class="warn-box">Set a model below first.</p>` : null}
    <ol class="chat-log" aria-label="conversation" aria-live="polite">${messages.map((m, i) => html`<${Message} key=${i} m=${m} />`)}</ol>
    ${send.busy ? html`<${Loading} label="The model is answering…" />` : null}
    <${ErrorBox} error=${send.error} onRetry=${() => send.run(messages)} />
    <form class="chat-form" onSubmit=${submit} ref=${end}>
      <${Field} label="Ask about your data">${(id) => html`<textarea id=${id} rows="3" value=${text} onInput=${(e) => setText(e.target.value)}
        onKeyDown=${(e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) submit(e); }}></textarea>`}<//>
      <div class="toolbar"><button type="submit" class="primary" disabled=${send.busy || !text.trim()}>Send</button>
        <span class="muted">Ctrl+Enter sends.</span>
        ${messages.length ? html`<button type="button" onClick=${() => { setMessages([]); send.clear(); }}>New conversation</button>` : null}</div>
    </form>
  </section>`;
}

export default function Assistant() {
  useTitle("Assistant");
  const config = useLoad((signal) => get("/ai/config", {}, { signal }), []);
  const usage = useLoad((signal) => get("/ai/usage", {}, { signal }), []);
  return html`<section class="page assistant">
    <div class="page-head"><h1>Assistant</h1></div>
    <p class="muted">The assistant reads and changes your data only through the same API the app uses; every change it makes is in the history.</p>
    <${ErrorBox} error=${config.error} onRetry=${config.reload} />
    ${config.data ? html`<${Chat} configured=${config.data.configured} />
      <${Config} key=${config.data.key_hint || "none"} config=${config.data} onSaved=${(c) => { config.setData(c); usage.reload(); }} />` : html`<${Loading} />`}
    ${usage.data ? html`<section class="card" aria-labelledby="usage-h"><h2 id="usage-h">Usage</h2>
      <p>${formatCount(usage.data.total.requests)} requests · ${formatCount(usage.data.total.input_tokens)} tokens in ·
        ${formatCount(usage.data.total.output_tokens)} tokens out</p></section>` : null}
  </section>`;
}
