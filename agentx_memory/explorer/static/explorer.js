/* The memory explorer: a small hash-routed page over the explorer's JSON (no framework, no build step).
   Routes: #/ (users) · #/u/<user>/<section>[/<id>][?query]. Every text from the store goes in with textContent. */
"use strict";

(function () {
  const BASE = document.body.dataset.base;
  const KEY_HEADER = document.body.dataset.keyHeader || "Authorization";
  const API = BASE + "api/";
  const SVG = "http://www.w3.org/2000/svg";
  const main = document.getElementById("main");
  const statusBox = document.getElementById("status");
  const SECTIONS = ["overview", "conversations", "entities", "facts", "goals", "tools", "audit", "search"];
  const TITLES = {overview: "Overview", conversations: "Conversations", entities: "Entities", facts: "Facts",
                  goals: "Goals", tools: "Tool statistics", audit: "Audit trail", search: "Search"};
  let renderToken = 0;
  // per user, what this reader may open (the access route's answer); forgotten when another key is typed
  const access = new Map();

  // --- small DOM helpers -------------------------------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, String(v));
    }
    for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return el;
  }

  const enc = encodeURIComponent;
  const fmtTime = (iso) => (iso ? new Date(iso).toLocaleString(undefined, {dateStyle: "medium", timeStyle: "short"}) : "");
  const fmtNum = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
  const badge = (text) => h("span", {class: "badge " + String(text).replace(/[^a-z_]/gi, "_"), text});
  const userHref = (user, section, rest) => "#/u/" + enc(user) + "/" + section + (rest || "");
  const turnHref = (user, conversationId, turnId) =>
    userHref(user, "conversations", "/" + enc(conversationId) + (turnId ? "?turn=" + enc(turnId) : ""));

  function say(text) { statusBox.textContent = text; }

  // --- the API -----------------------------------------------------------------------------------------------------

  function authHeaders() {
    const key = sessionStorage.getItem("agentx-explorer-key");
    if (!key) return {};
    return {[KEY_HEADER]: KEY_HEADER.toLowerCase() === "authorization" ? "Bearer " + key : key};
  }

  function askKey() {
    const dialog = document.getElementById("key-dialog");
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => {
        const value = document.getElementById("key-input").value;
        if (dialog.returnValue === "ok" && value) {
          sessionStorage.setItem("agentx-explorer-key", value);
          access.clear();
          resolve(true);
        } else resolve(false);
      }, {once: true});
      dialog.showModal();
    });
  }

  async function api(path, options) {
    say("Loading…");
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const init = Object.assign({headers: {}}, options || {});
        init.headers = Object.assign({Accept: "application/json"}, authHeaders(), init.headers);
        const response = await fetch(API + path, init);
        if (response.status === 401 && attempt === 0 && await askKey()) continue;
        const body = await response.json().catch(() => ({}));
        if (!response.ok) {
          const detail = body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : "";
          const error = new Error(detail || response.statusText || "request failed");
          error.status = response.status;
          throw error;
        }
        return body;
      }
      throw Object.assign(new Error("an API key is needed"), {status: 401});
    } finally {
      say("");
    }
  }

  // --- routing -----------------------------------------------------------------------------------------------------

  function parseHash() {
    const raw = location.hash.replace(/^#/, "") || "/";
    const [path, query] = raw.split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    return {parts, query: new URLSearchParams(query || "")};
  }

  async function readerAccess(user) {
    if (!access.has(user)) access.set(user, await api("users/" + enc(user) + "/access"));
    return access.get(user);
  }

  // an agent's key reads the user's memory it may see, but not the audit trail (every agent's queries and results)
  const mayOpen = (allowed, section) => section !== "audit" || Boolean(allowed && allowed.audit_trail);

  function setSections(user, section, allowed) {
    const nav = document.getElementById("sections");
    nav.hidden = !user;
    for (const link of nav.querySelectorAll("a[data-section]")) {
      link.parentElement.hidden = Boolean(user) && !mayOpen(allowed, link.dataset.section);
      link.href = user ? userHref(user, link.dataset.section) : "#/";
      if (link.dataset.section === section) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    if (user) document.getElementById("user-input").value = user;
  }

  async function route() {
    const token = ++renderToken;
    const {parts, query} = parseHash();
    const view = h("div", {});
    let title = "Users";
    try {
      if (parts[0] !== "u" || !parts[1]) {
        setSections(null, null);
        await renderUsers(view);
      } else {
        const user = parts[1];
        const section = SECTIONS.includes(parts[2]) ? parts[2] : "overview";
        const allowed = await readerAccess(user);
        setSections(user, section, allowed);
        title = TITLES[section] + " · " + user;
        const renderers = {overview: renderOverview, conversations: renderConversations, entities: renderEntities,
                           facts: renderFacts, goals: renderGoals, tools: renderTools, audit: renderAudit,
                           search: renderSearch};
        if (mayOpen(allowed, section)) await renderers[section](view, user, parts[3], query);
        else renderNotForThisKey(view, section);
      }
    } catch (error) {
      view.replaceChildren(h("h2", {text: "Could not load this view"}),
                           h("p", {class: "error", role: "alert", text: error.message}));
    }
    if (token !== renderToken) return;  // a newer navigation won
    main.replaceChildren(view);
    document.title = title + " · Memory explorer";
    const target = main.querySelector(".highlight") || main.querySelector("h2");
    if (target) {
      if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
      target.focus({preventScroll: true});
      target.scrollIntoView({block: target.classList.contains("highlight") ? "center" : "nearest"});
    }
  }

  // --- views -------------------------------------------------------------------------------------------------------

  function renderNotForThisKey(view, section) {
    view.append(h("h2", {text: TITLES[section]}),
                h("p", {class: "muted", text: "This key is an agent's: it reads the memories that agent may see, not " +
                        "the audit trail, which holds every agent's queries and results. The user's own key or the " +
                        "administrator's reads it."}));
  }

  async function renderUsers(view) {
    view.append(h("h2", {text: "Users"}));
    const list = h("ul", {class: "user-list", "aria-label": "Users with memory"});
    view.append(list);
    const more = h("button", {type: "button", class: "secondary", text: "More users"});
    let after = null;
    async function load() {
      let body;
      try {
        body = await api("users?limit=100" + (after ? "&after=" + enc(after) : ""));
      } catch (error) {
        if (error.status === 401 || error.status === 403) {
          view.append(h("p", {text: "This key may not list users: type a user id above."}));
          more.remove();
          return;
        }
        throw error;
      }
      const options = document.getElementById("user-options");
      for (const user of body.items) {
        list.append(h("li", {}, h("a", {href: userHref(user, "overview"), text: user})));
        options.append(h("option", {value: user}));
      }
      if (!body.items.length && !after) view.append(h("p", {class: "muted", text: "No user has memory yet."}));
      after = body.next_after;
      more.hidden = !after;
    }
    more.addEventListener("click", () => load().catch(showError));
    view.append(h("p", {class: "pager"}, more));
    await load();
  }

  async function renderOverview(view, user) {
    const [overview, recent] = await Promise.all([
      api("users/" + enc(user)), api("users/" + enc(user) + "/conversations?limit=5")]);
    const c = overview.counts;
    const counts = [["Conversations", c.conversations], ["Turns", c.turns], ["Entities", c.entities],
                    ["Facts", c.facts], ["Active facts", c.active_facts], ["Goals", c.goals],
                    ["Strategies", c.strategies], ["Rules", c.controls], ["Tool calls", c.tool_invocations]];
    view.append(
      h("h2", {text: "Overview of " + user}),
      h("dl", {class: "counts"}, counts.map(([label, n]) => h("div", {}, h("dt", {text: label}), h("dd", {text: n})))),
      h("h3", {text: "Latest conversations"}),
      conversationTable(user, recent.items));
    const prefs = overview.profile.preferences || {};
    if (Object.keys(prefs).length) {
      view.append(h("h3", {text: "Preferences"}), h("table", {},
        h("thead", {}, h("tr", {}, h("th", {scope: "col", text: "Key"}), h("th", {scope: "col", text: "Value"}))),
        h("tbody", {}, Object.entries(prefs).map(([k, v]) =>
          h("tr", {}, h("td", {class: "mono", text: k}), h("td", {text: JSON.stringify(v)}))))));
    }
  }

  function conversationTable(user, items) {
    if (!items.length) return h("p", {class: "muted", text: "No conversations."});
    return h("table", {},
      h("thead", {}, h("tr", {}, ["Conversation", "Channel", "Turns", "Last turn", ""].map((t, i) =>
        h("th", {scope: "col", class: i === 2 ? "num" : null, text: t})))),
      h("tbody", {}, items.map((c) => h("tr", {},
        h("td", {}, h("a", {href: turnHref(user, c.conversation_id), class: "mono", text: c.conversation_id})),
        h("td", {class: "mono", text: c.channel}), h("td", {class: "num", text: c.turns}),
        h("td", {text: fmtTime(c.last_turn_at)}), h("td", {}, c.archived ? badge("archived") : "")))));
  }

  async function renderConversations(view, user, conversationId, query) {
    if (conversationId) return renderConversation(view, user, conversationId, query.get("turn"));
    view.append(h("h2", {text: "Conversations"}));
    const holder = h("div", {});
    view.append(holder);
    await pagedTable(holder, (offset) => api("users/" + enc(user) + "/conversations?limit=20&offset=" + offset),
                     (items) => conversationTable(user, items), "More conversations");
  }

  async function pagedTable(holder, fetchPage, render, moreLabel) {
    const more = h("button", {type: "button", class: "secondary", text: moreLabel});
    let offset = 0;
    async function load() {
      const body = await fetchPage(offset);
      holder.insertBefore(render(body.items), more.parentNode);
      offset = body.next_offset;
      more.hidden = offset === null || offset === undefined;
    }
    holder.append(h("p", {class: "pager"}, more));
    more.addEventListener("click", () => load().catch(showError));
    await load();
  }

  function turnItem(turn, highlighted) {
    return h("li", {class: "turn" + (highlighted ? " highlight" : ""), id: "turn-" + turn.id,
                    "aria-current": highlighted ? "true" : null},
      h("header", {},
        h("span", {class: "role", text: turn.role}), h("span", {text: "#" + turn.index}),
        h("time", {datetime: turn.timestamp, text: fmtTime(turn.timestamp)}),
        h("span", {class: "mono", text: turn.channel}),
        turn.agent_id ? h("span", {text: "agent " + turn.agent_id}) : null),
      h("p", {text: turn.content}));
  }

  async function renderConversation(view, user, conversationId, turnId) {
    let start = 0;
    if (turnId) {
      const turn = await api("users/" + enc(user) + "/turns/" + enc(turnId)).catch(() => null);
      if (turn) start = Math.max(0, turn.index - 5);
    }
    view.append(h("p", {}, h("a", {href: userHref(user, "conversations"), text: "← All conversations"})),
                h("h2", {}, "Conversation ", h("span", {class: "mono", text: conversationId})));
    if (start > 0) {
      view.append(h("p", {}, h("a", {href: turnHref(user, conversationId), text: "Show from the first turn"})));
    }
    const list = h("ol", {class: "turns", "aria-label": "Turns"});
    const more = h("button", {type: "button", class: "secondary", text: "More turns"});
    let next = start;
    async function load() {
      const body = await api("users/" + enc(user) + "/conversations/" + enc(conversationId) +
                             "?limit=50&from_index=" + next);
      for (const t of body.items) list.append(turnItem(t, t.id === turnId));
      next = body.next_index;
      more.hidden = next === null || next === undefined;
    }
    more.addEventListener("click", () => load().catch(showError));
    view.append(list, h("p", {class: "pager"}, more));
    await load();
  }

  // The entity graph: the most salient entities, laid out by a few hundred steps of a force simulation (repulsion
  // between every pair, springs along edges, a pull to the centre) from a circle, so the same data always gives
  // the same picture.
  function layout(nodes, edges, width, height) {
    const n = nodes.length;
    const cx = width / 2, cy = height / 2, r0 = Math.min(width, height) * 0.38;
    const pos = nodes.map((_, i) => ({x: cx + r0 * Math.cos(2 * Math.PI * i / Math.max(n, 1)),
                                      y: cy + r0 * Math.sin(2 * Math.PI * i / Math.max(n, 1))}));
    const index = new Map(nodes.map((node, i) => [node.id, i]));
    const links = edges.map((e) => [index.get(e.source), index.get(e.target)]).filter(([a, b]) => a !== undefined && b !== undefined && a !== b);
    const k = Math.sqrt((width * height) / Math.max(n, 1)) * 0.75;
    for (let step = 0; step < 300; step++) {
      const temp = 12 * (1 - step / 300) + 0.5;
      const disp = pos.map(() => ({x: 0, y: 0}));
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          let dx = pos[i].x - pos[j].x, dy = pos[i].y - pos[j].y;
          const d2 = Math.max(dx * dx + dy * dy, 1), f = (k * k) / d2;
          disp[i].x += dx * f; disp[i].y += dy * f; disp[j].x -= dx * f; disp[j].y -= dy * f;
        }
      }
      for (const [a, b] of links) {
        const dx = pos[a].x - pos[b].x, dy = pos[a].y - pos[b].y, d = Math.max(Math.hypot(dx, dy), 1);
        const f = d / k;
        disp[a].x -= dx * f; disp[a].y -= dy * f; disp[b].x += dx * f; disp[b].y += dy * f;
      }
      for (let i = 0; i < n; i++) {
        disp[i].x += (cx - pos[i].x) * 0.05; disp[i].y += (cy - pos[i].y) * 0.05;
        const d = Math.max(Math.hypot(disp[i].x, disp[i].y), 0.01), move = Math.min(d, temp);
        pos[i].x = Math.min(width - 50, Math.max(50, pos[i].x + (disp[i].x / d) * move));
        pos[i].y = Math.min(height - 24, Math.max(24, pos[i].y + (disp[i].y / d) * move));
      }
    }
    return pos;
  }

  function graphSvg(user, graph, selected) {
    const width = 720, height = 480;
    const pos = layout(graph.nodes, graph.edges, width, height);
    const at = new Map(graph.nodes.map((node, i) => [node.id, pos[i]]));
    const svg = s("svg", {viewBox: `0 0 ${width} ${height}`, class: "graph", role: "group",
                          "aria-label": `Entity graph: ${graph.nodes.length} entities, ${graph.edges.length} relationships`});
    const edgeLayer = s("g", {"aria-hidden": "true"});
    for (const e of graph.edges) {
      const a = at.get(e.source), b = at.get(e.target);
      if (!a || !b) continue;
      edgeLayer.append(s("line", {x1: a.x, y1: a.y, x2: b.x, y2: b.y}),
                       s("text", {class: "edge-label", x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 3,
                                  "text-anchor": "middle"}, e.type));
    }
    svg.append(edgeLayer);
    graph.nodes.forEach((node, i) => {
      const radius = 7 + 10 * Math.max(0, Math.min(1, node.salience || 0));
      const open = () => { location.hash = userHref(user, "entities", "/" + enc(node.id)); };
      const g = s("g", {class: "node" + (node.id === selected ? " selected" : ""), tabindex: 0, role: "button",
                        "data-entity-id": node.id, "aria-label": `${node.name} (${node.type})`,
                        "aria-pressed": node.id === selected ? "true" : "false",
                        transform: `translate(${pos[i].x.toFixed(1)},${pos[i].y.toFixed(1)})`,
                        onclick: open,
                        onkeydown: (event) => {
                          if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(); }
                        }},
        s("title", {}, `${node.name} (${node.type})`),
        s("circle", {r: radius.toFixed(1)}),
        s("text", {x: 0, y: radius + 12, "text-anchor": "middle"}, node.name.length > 22 ? node.name.slice(0, 21) + "…" : node.name));
      svg.append(g);
    });
    return svg;
  }

  function factLine(user, fact) {
    const source = fact.conversation_id && fact.source_turn_id
      ? h("a", {href: turnHref(user, fact.conversation_id, fact.source_turn_id), class: "source-turn",
                text: "source turn"}) : h("span", {class: "muted", text: "no source turn"});
    return h("li", {},
      h("a", {href: userHref(user, "facts", "/" + enc(fact.id)), text: fact.claim}), " ",
      fact.status && fact.status !== "active" ? badge(fact.status) : null, " · ", source);
  }

  async function renderEntities(view, user, entityId) {
    const graph = await api("users/" + enc(user) + "/graph?limit=40");
    view.append(h("h2", {text: "Entities"}));
    if (!graph.nodes.length) {
      view.append(h("p", {class: "muted", text: "No entities yet."}));
      return;
    }
    view.append(h("p", {class: "muted", text: "The " + graph.nodes.length + " most salient entities. Choose one " +
                                                  "(click, or Tab then Enter) to see its facts and relationships."}));
    const panel = h("section", {class: "panel", id: "entity-panel", "aria-live": "polite",
                                "aria-label": "Selected entity"});
    view.append(h("div", {class: "graph-layout"}, graphSvg(user, graph, entityId), panel));
    if (entityId) {
      const detail = await api("users/" + enc(user) + "/entities/" + enc(entityId));
      const e = detail.entity;
      const names = new Map([[e.id, e.name], ...detail.neighbours.map((x) => [x.id, x.name])]);
      const nameOf = (id) => names.get(id) || id;
      panel.append(h("div", {},
        h("h3", {id: "entity-title", text: e.name}),
        h("p", {}, badge(e.type), " salience ", fmtNum(e.salience, 2), " · ", h("span", {class: "mono", text: e.channel})),
        e.description ? h("p", {text: e.description}) : null,
        e.aliases.length ? h("p", {}, "Also: ", e.aliases.join(", ")) : null,
        h("h3", {text: "Facts"}),
        detail.facts.length ? h("ul", {class: "entity-facts"}, detail.facts.map((f) => factLine(user, f)))
                            : h("p", {class: "muted", text: "No facts about it."}),
        h("h3", {text: "Relationships"}),
        detail.relationships.length ? h("ul", {}, detail.relationships.map((r) => h("li", {},
          h("a", {href: userHref(user, "entities", "/" + enc(r.source_id)), text: nameOf(r.source_id)}),
          " ", h("span", {class: "mono", text: r.rel_type}), " ",
          h("a", {href: userHref(user, "entities", "/" + enc(r.target_id)), text: nameOf(r.target_id)}))))
          : h("p", {class: "muted", text: "No relationships."})));
    } else {
      panel.append(h("p", {class: "muted", text: "No entity selected."}));
    }
    view.append(h("h3", {text: "All entities"}));
    const holder = h("div", {});
    view.append(holder);
    await pagedTable(holder, (offset) => api("users/" + enc(user) + "/entities?limit=50&offset=" + offset),
      (items) => h("table", {},
        h("thead", {}, h("tr", {}, ["Name", "Type", "Channel", "Salience", "Seen"].map((t, i) =>
          h("th", {scope: "col", class: i === 3 ? "num" : null, text: t})))),
        h("tbody", {}, items.map((x) => h("tr", {},
          h("td", {}, h("a", {href: userHref(user, "entities", "/" + enc(x.id)), text: x.name})),
          h("td", {text: x.type}), h("td", {class: "mono", text: x.channel}),
          h("td", {class: "num", text: fmtNum(x.salience, 2)}), h("td", {text: fmtTime(x.first_seen)}))))),
      "More entities");
  }

  async function renderFacts(view, user, factId, query) {
    if (factId) return renderFact(view, user, factId);
    const status = query.get("status") || "";
    view.append(h("h2", {text: "Facts"}));
    const select = h("select", {id: "fact-status"},
      ["", "active", "superseded", "review", "rejected", "expired", "duplicate"].map((v) =>
        h("option", {value: v, selected: v === status, text: v || "every status"})));
    select.addEventListener("change", () => {
      location.hash = userHref(user, "facts", select.value ? "?status=" + enc(select.value) : "");
    });
    view.append(h("div", {class: "toolbar"}, h("label", {for: "fact-status", text: "Status"}), select));
    const holder = h("div", {});
    view.append(holder);
    await pagedTable(holder, (offset) => api("users/" + enc(user) + "/facts?limit=50&offset=" + offset +
                                             (status ? "&status=" + enc(status) : "")),
      (items) => items.length ? h("table", {},
        h("thead", {}, h("tr", {}, ["Claim", "Status", "Confidence", "Channel", "Source", "Superseded by"].map((t, i) =>
          h("th", {scope: "col", class: i === 2 ? "num" : null, text: t})))),
        h("tbody", {}, items.map((f) => h("tr", {},
          h("td", {}, h("a", {href: userHref(user, "facts", "/" + enc(f.id)), text: f.claim})),
          h("td", {}, badge(f.status)), h("td", {class: "num", text: fmtNum(f.confidence, 2)}),
          h("td", {class: "mono", text: f.channel}),
          h("td", {}, f.conversation_id && f.source_turn_id
            ? h("a", {href: turnHref(user, f.conversation_id, f.source_turn_id), text: "turn"}) : "–"),
          h("td", {}, f.superseded_by ? h("a", {href: userHref(user, "facts", "/" + enc(f.superseded_by)),
                                                class: "mono", text: f.superseded_by}) : "–")))))
        : h("p", {class: "muted", text: "No facts."}),
      "More facts");
  }

  async function renderFact(view, user, factId) {
    const detail = await api("users/" + enc(user) + "/facts/" + enc(factId));
    const f = detail.fact;
    view.append(
      h("p", {}, h("a", {href: userHref(user, "facts"), text: "← All facts"})),
      h("h2", {text: f.claim}),
      h("table", {class: "fact-fields"}, h("tbody", {},
        [["Status", badge(f.status)], ["Confidence", fmtNum(f.confidence, 2)], ["Certainty", f.certainty || "–"],
         ["Channel", f.channel], ["Source", f.source], ["Learned", fmtTime(f.created_at)],
         ["Written by", f.agent_id ? "agent " + f.agent_id : "the user"], ["Id", h("span", {class: "mono", text: f.id})]]
          .map(([k, v]) => h("tr", {}, h("th", {scope: "row", text: k}), h("td", {}, v))))),
      h("h3", {text: "Provenance: the turns it was learned from"}),
      detail.source_turns.length
        ? h("ol", {class: "turns"}, detail.source_turns.map((t) => h("li", {class: "turn"},
            h("header", {}, h("span", {class: "role", text: t.role}),
              h("a", {href: turnHref(user, t.conversation_id, t.id), class: "source-turn",
                      text: "in conversation " + t.conversation_id + ", turn #" + t.index}),
              h("time", {datetime: t.timestamp, text: fmtTime(t.timestamp)})),
            h("p", {text: t.content}))))
        : h("p", {class: "muted", text: "Not learned from a stored turn."}),
      h("h3", {text: "Superseded by"}),
      detail.superseded_by ? h("ul", {}, factLine(user, detail.superseded_by))
                           : h("p", {class: "muted", text: f.superseded_by ? f.superseded_by : "Nothing: it stands."}),
      h("h3", {text: "It superseded"}),
      detail.supersedes.length ? h("ul", {}, detail.supersedes.map((x) => factLine(user, x)))
                               : h("p", {class: "muted", text: "No earlier fact."}));
  }

  async function renderGoals(view, user) {
    const body = await api("users/" + enc(user) + "/goals");
    view.append(h("h2", {text: "Goals"}));
    if (!body.items.length) {
      view.append(h("p", {class: "muted", text: "No goals."}));
      return;
    }
    const byId = new Map(body.items.map((g) => [g.id, g]));
    const children = new Map();
    const roots = [];
    for (const g of body.items) {
      if (g.parent_id && byId.has(g.parent_id)) {
        if (!children.has(g.parent_id)) children.set(g.parent_id, []);
        children.get(g.parent_id).push(g);
      } else roots.push(g);
    }
    const item = (g, seen) => {
      const kids = seen.has(g.id) ? [] : (children.get(g.id) || []);
      seen.add(g.id);
      return h("li", {},
        h("span", {class: "goal"}, h("span", {text: g.description}), badge(g.status),
          g.priority ? h("span", {class: "muted", text: "priority " + g.priority}) : null,
          g.blocked_by.length ? h("span", {class: "muted", text: "blocked by: " +
            g.blocked_by.map((b) => (byId.get(b) || {description: b}).description).join("; ")}) : null,
          g.result ? h("span", {class: "muted", text: "result: " + g.result}) : null),
        kids.length ? h("ul", {}, kids.map((k) => item(k, seen))) : null);
    };
    const seen = new Set();
    view.append(h("ul", {class: "tree", "aria-label": "Goal tree"}, roots.map((g) => item(g, seen))));
  }

  async function renderTools(view, user) {
    const body = await api("users/" + enc(user) + "/tools");
    view.append(h("h2", {text: "Tool statistics"}));
    if (!body.items.length) {
      view.append(h("p", {class: "muted", text: "No tool calls recorded."}));
      return;
    }
    view.append(h("table", {},
      h("thead", {}, h("tr", {}, ["Tool", "Uses", "Successes", "Success rate", "Mean latency (ms)", "p95 (ms)", "Last used"]
        .map((t, i) => h("th", {scope: "col", class: i > 0 && i < 6 ? "num" : null, text: t})))),
      h("tbody", {}, body.items.map((t) => h("tr", {},
        h("td", {class: "mono", text: t.tool_name}), h("td", {class: "num", text: t.usage_count}),
        h("td", {class: "num", text: t.success_count}),
        h("td", {class: "num", text: (100 * (t.success_rate || 0)).toFixed(1) + " %"}),
        h("td", {class: "num", text: fmtNum(t.avg_latency_ms, 1)}), h("td", {class: "num", text: fmtNum(t.p95_latency_ms, 1)}),
        h("td", {text: fmtTime(t.last_used)}))))));
  }

  async function renderAudit(view, user, _unused, query) {
    const operation = query.get("operation") || "";
    const ops = await api("users/" + enc(user) + "/audit-operations");
    view.append(h("h2", {text: "Audit trail"}));
    const select = h("select", {id: "audit-operation"},
      h("option", {value: "", text: "every operation"}),
      [...new Set([...ops.items, ...(operation ? [operation] : [])])].map((op) =>
        h("option", {value: op, selected: op === operation, text: op})));
    select.addEventListener("change", () => {
      location.hash = userHref(user, "audit", select.value ? "?operation=" + enc(select.value) : "");
    });
    view.append(h("div", {class: "toolbar"}, h("label", {for: "audit-operation", text: "Operation"}), select));
    const tbody = h("tbody", {});
    const table = h("table", {class: "audit"},
      h("thead", {}, h("tr", {}, ["Time", "Operation", "Memory", "Channel", "Session", "Query / ids", "Results", "ms", "OK"]
        .map((t, i) => h("th", {scope: "col", class: i === 6 || i === 7 ? "num" : null, text: t})))), tbody);
    const more = h("button", {type: "button", class: "secondary", text: "Older entries"});
    let next = null;
    async function load() {
      let path = "users/" + enc(user) + "/audit?limit=50" + (operation ? "&operation=" + enc(operation) : "");
      if (next) path += "&before=" + enc(next.before) + "&before_id=" + next.before_id;
      const body = await api(path);
      for (const a of body.items) {
        const ids = a.query_text || [...(a.affected_ids || []), ...(a.result_ids || [])].slice(0, 4).join(", ");
        tbody.append(h("tr", {},
          h("td", {}, h("time", {datetime: a.timestamp, text: fmtTime(a.timestamp)})),
          h("td", {class: "mono", text: a.operation}), h("td", {text: a.memory_type}),
          h("td", {class: "mono", text: a.source_channel || ""}), h("td", {class: "mono", text: a.session_id || ""}),
          h("td", {text: ids}), h("td", {class: "num", text: a.result_count ?? ""}),
          h("td", {class: "num", text: a.latency_ms ?? ""}),
          h("td", {}, a.success === false ? badge("failed") : badge("ok"))));
      }
      if (!tbody.children.length) tbody.append(h("tr", {}, h("td", {colspan: 9, class: "muted", text: "No entries."})));
      next = body.next;
      more.hidden = !next;
    }
    more.addEventListener("click", () => load().catch(showError));
    view.append(table, h("p", {class: "pager"}, more));
    await load();
  }

  async function renderSearch(view, user, _unused, query) {
    const q = query.get("q") || "";
    view.append(h("h2", {text: "Search"}),
      h("p", {class: "muted", text: "Runs remember() for this user, as an agent would, and shows every item it " +
                                    "returns with the signals its score is made of (value × weight = contribution). " +
                                    "Like any recall, it counts as an access and is audited."}));
    const input = h("input", {id: "search-input", type: "search", value: q, required: true, size: 40});
    const topK = h("input", {id: "search-top-k", type: "number", min: 1, max: 50, value: query.get("top_k") || 10});
    const form = h("form", {class: "toolbar", role: "search", "aria-label": "Recall"},
      h("label", {for: "search-input", text: "Query"}), input,
      h("label", {for: "search-top-k", text: "Top k"}), topK,
      h("button", {type: "submit", text: "Search"}));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      location.hash = userHref(user, "search", "?q=" + enc(input.value) + "&top_k=" + enc(topK.value));
    });
    view.append(form);
    if (!q) return;
    const bundle = await api("users/" + enc(user) + "/search", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({query: q, top_k: Number(topK.value) || 10})});
    view.append(h("p", {class: "muted", id: "search-summary",
      text: `${bundle.items.length} items in ${fmtNum(bundle.metrics.total_ms, 1)} ms` +
            (bundle.complete ? "" : " (incomplete: " + Object.keys(bundle.metrics.skipped).join(", ") + " unreachable)")}));
    const results = h("ol", {class: "results", "aria-label": "Recalled items, best first"});
    for (const item of bundle.items) {
      const signals = Object.entries(item.signals).sort((a, b) => b[1].contribution - a[1].contribution);
      const top = Math.max(...signals.map(([, x]) => Math.abs(x.contribution)), 1e-9);
      const source = item.source ? h("a", {href: turnHref(user, item.source.conversation_id, item.source.turn_id),
                                           text: item.kind === "turn" ? "open in conversation" : "source turn"}) : null;
      results.append(h("li", {class: "result"},
        h("h3", {}, badge(item.kind), h("span", {text: "score " + fmtNum(item.score)}),
          item.cosine !== null ? h("span", {class: "muted", text: "cosine " + fmtNum(item.cosine)}) : null, source),
        h("p", {text: item.text}),
        h("table", {class: "breakdown"},
          h("caption", {text: "Score breakdown"}),
          h("thead", {}, h("tr", {}, ["Signal", "Value", "Weight", "Contribution", "", "Detail"].map((t, i) =>
            h("th", {scope: "col", class: i > 0 && i < 4 ? "num" : null, text: t})))),
          h("tbody", {}, signals.map(([name, x]) => {
            const bar = h("span", {class: "bar", "aria-hidden": "true"});
            bar.style.width = Math.round(80 * Math.abs(x.contribution) / top) + "px";
            return h("tr", {}, h("th", {scope: "row", class: "mono", text: name}),
              h("td", {class: "num", text: fmtNum(x.value)}), h("td", {class: "num", text: fmtNum(x.weight)}),
              h("td", {class: "num", text: fmtNum(x.contribution)}), h("td", {}, bar),
              h("td", {class: "muted", text: x.detail}));
          })))));
    }
    view.append(results);
    if (!bundle.items.length) view.append(h("p", {class: "muted", text: "Nothing recalled."}));
  }

  function showError(error) {
    main.append(h("p", {class: "error", role: "alert", text: error.message}));
  }

  // --- start -------------------------------------------------------------------------------------------------------

  document.getElementById("user-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const user = document.getElementById("user-input").value.trim();
    if (user) location.hash = userHref(user, "overview");
  });
  window.addEventListener("hashchange", route);
  route();
})();
