// The hosted chat page: fetches the chat's settings, shows the password / e-mail code / sign-in gate when
// needed, sends messages with a conversation id and renders the reply as it streams (Server-Sent Events).
// The conversation is kept in localStorage, so a reload shows it again and continues it.
(function () {
  'use strict';
  var body = document.body;
  var identifier = body.dataset.identifier;
  var api = '/api/chat/' + encodeURIComponent(identifier);
  var storageKey = 'owa-chat:' + identifier;
  var gate = document.getElementById('gate');
  var conversation = document.getElementById('conversation');
  var list = document.getElementById('messages');
  var composer = document.getElementById('composer');
  var textarea = document.getElementById('message');
  var sendButton = document.getElementById('send');
  var statusLine = document.getElementById('status');
  var welcome = '';

  var accent = body.dataset.accent;
  if (accent && /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.test(accent)) document.documentElement.style.setProperty('--accent', accent);

  function load() {
    try {
      var saved = JSON.parse(localStorage.getItem(storageKey) || 'null');
      if (saved && typeof saved.conversationId === 'string' && Array.isArray(saved.messages)) return saved;
    } catch (e) { /* a corrupt entry starts a new conversation */ }
    return { conversationId: newId(), messages: [] };
  }
  function newId() {
    return (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Date.now()) + Math.random().toString(16).slice(2);
  }
  var state = load();
  function save() {
    try { localStorage.setItem(storageKey, JSON.stringify(state)); } catch (e) { /* storage full or disabled */ }
  }

  function setStatus(text, isError) {
    statusLine.textContent = text || '';
    statusLine.classList.toggle('error', Boolean(isError));
  }

  function addMessage(role, text) {
    var li = document.createElement('li');
    li.className = 'message ' + role;
    var who = document.createElement('span');
    who.className = 'who';
    who.textContent = role === 'user' ? 'You' : 'Assistant';
    var content = document.createElement('span');
    content.className = 'content';
    content.textContent = text;
    li.appendChild(who);
    li.appendChild(content);
    list.appendChild(li);
    li.scrollIntoView({ block: 'end' });
    return li;
  }

  function showChat(config) {
    gate.hidden = true;
    gate.textContent = '';
    conversation.hidden = false;
    composer.hidden = false;
    welcome = (config.customizations && config.customizations.welcomeMessage) || '';
    list.textContent = '';
    if (welcome) addMessage('assistant', welcome).classList.add('welcome');
    state.messages.forEach(function (m) { addMessage(m.role, m.text); });
    textarea.focus();
  }

  function field(form, label, type, name, autocomplete) {
    var id = 'gate-' + name;
    var l = document.createElement('label');
    l.htmlFor = id;
    l.textContent = label;
    var input = document.createElement('input');
    input.id = id;
    input.name = name;
    input.type = type;
    input.required = true;
    if (autocomplete) input.autocomplete = autocomplete;
    form.appendChild(l);
    form.appendChild(input);
    return input;
  }

  function gateForm(title, hint) {
    gate.textContent = '';
    gate.hidden = false;
    conversation.hidden = true;
    composer.hidden = true;
    var h = document.createElement('h2');
    h.id = 'gate-title';
    h.textContent = title;
    gate.appendChild(h);
    if (hint) {
      var p = document.createElement('p');
      p.textContent = hint;
      gate.appendChild(p);
    }
    var form = document.createElement('form');
    gate.appendChild(form);
    return form;
  }

  function submitButton(form, text) {
    var b = document.createElement('button');
    b.type = 'submit';
    b.textContent = text;
    form.appendChild(b);
    return b;
  }

  function postJson(url, payload) {
    return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload), credentials: 'same-origin' })
      .then(function (res) {
        return res.text().then(function (t) {
          var data = null;
          try { data = t ? JSON.parse(t) : null; } catch (e) { data = null; }
          return { status: res.status, data: data, retryAfter: res.headers.get('retry-after') };
        });
      });
  }

  function explain(r) {
    if (r.status === 429) return 'Too many attempts. Try again in ' + (r.retryAfter || 'a few') + ' seconds.';
    return (r.data && r.data.error && r.data.error.message) || 'Something went wrong (HTTP ' + r.status + ').';
  }

  function passwordGate() {
    var form = gateForm('This chat is protected', 'Enter the password to continue.');
    var input = field(form, 'Password', 'password', 'password', 'current-password');
    var button = submitButton(form, 'Continue');
    input.focus();
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      button.disabled = true;
      setStatus('Checking…');
      postJson(api, { password: input.value }).then(function (r) {
        button.disabled = false;
        if (r.status === 200) { setStatus(''); start(); return; }
        setStatus(r.status === 401 ? 'That password is not correct.' : explain(r), true);
        input.select();
      });
    });
  }

  function emailGate() {
    var form = gateForm('This chat is for invited people', 'Enter your e-mail address and we will send you a one-time code.');
    var email = field(form, 'E-mail address', 'email', 'email', 'email');
    var button = submitButton(form, 'Send code');
    email.focus();
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      button.disabled = true;
      postJson(api + '/otp', { email: email.value }).then(function (r) {
        button.disabled = false;
        if (r.status !== 200) { setStatus(explain(r), true); return; }
        setStatus('We sent a code to ' + email.value + '.');
        codeGate(email.value);
      });
    });
  }

  function codeGate(address) {
    var form = gateForm('Check your e-mail', 'Enter the 6-digit code sent to ' + address + '.');
    var code = field(form, 'Code', 'text', 'otp', 'one-time-code');
    code.inputMode = 'numeric';
    code.pattern = '[0-9]{6}';
    var button = submitButton(form, 'Verify');
    code.focus();
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      button.disabled = true;
      postJson(api + '/otp', { email: address, otp: code.value }).then(function (r) {
        button.disabled = false;
        if (r.status === 200) { setStatus(''); start(); return; }
        setStatus(explain(r), true);
      });
    });
  }

  function ssoGate() {
    gateForm('Sign in to continue', 'This chat is available to signed-in members only.');
    var link = document.createElement('a');
    link.className = 'button';
    link.href = '/login?next=' + encodeURIComponent(location.pathname);
    link.textContent = 'Sign in';
    gate.appendChild(link);
  }

  function notice(title, text) {
    var form = gateForm(title, text);
    form.remove();
  }

  function start() {
    setStatus('');
    fetch(api, { credentials: 'same-origin', headers: { accept: 'application/json' } }).then(function (res) {
      return res.json().then(function (data) { return { status: res.status, data: data }; }, function () { return { status: res.status, data: null }; });
    }).then(function (r) {
      if (r.status === 200) return showChat(r.data);
      var reason = r.data && r.data.error && r.data.error.details && r.data.error.details.reason;
      if (reason === 'auth_required_password') return passwordGate();
      if (reason === 'auth_required_email') return emailGate();
      if (reason === 'auth_required_sso') return ssoGate();
      if (r.status === 404) return notice('Chat not found', 'This chat does not exist or has been deleted.');
      if (r.status === 403) return notice('Chat unavailable', 'This chat is currently inactive.');
      notice('Chat unavailable', explain(r));
    }, function () {
      notice('Chat unavailable', 'The chat could not be reached. Check your connection and reload.');
    });
  }

  // Reads an SSE body frame by frame; calls onFrame with each parsed `data:` payload.
  function readEvents(response, onFrame) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = '';
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) return;
        buffer += decoder.decode(chunk.value, { stream: true });
        var end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          var block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          block.split('\n').forEach(function (line) {
            if (line.indexOf('data: ') !== 0) return;
            try { onFrame(JSON.parse(line.slice(6))); } catch (e) { /* ignore a malformed frame */ }
          });
        }
        return pump();
      });
    }
    return pump();
  }

  composer.addEventListener('submit', function (ev) {
    ev.preventDefault();
    var text = textarea.value.trim();
    if (!text) return;
    textarea.value = '';
    addMessage('user', text);
    state.messages.push({ role: 'user', text: text });
    save();
    var reply = addMessage('assistant', '');
    reply.classList.add('pending');
    reply.setAttribute('aria-busy', 'true');
    var content = reply.querySelector('.content');
    var answer = '';
    var lastBlock = null;
    sendButton.disabled = true;
    setStatus('Answering…');
    function finish(errorText) {
      reply.classList.remove('pending');
      reply.removeAttribute('aria-busy');
      sendButton.disabled = false;
      if (errorText) {
        setStatus(errorText, true);
        if (!answer) reply.remove();
      } else {
        setStatus('');
      }
      if (answer) { state.messages.push({ role: 'assistant', text: answer }); save(); }
      textarea.focus();
    }
    fetch(api, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ input: text, conversationId: state.conversationId }),
    }).then(function (res) {
      if (res.status === 401) { finish('Your access has expired; please sign in again.'); start(); return; }
      if (!res.ok || !res.body) {
        return res.json().then(function (d) { finish(explain({ status: res.status, data: d, retryAfter: res.headers.get('retry-after') })); }, function () { finish('Something went wrong (HTTP ' + res.status + ').'); });
      }
      var failed = null;
      return readEvents(res, function (frame) {
        if (frame === '[DONE]') return;
        if (typeof frame.chunk === 'string') {
          if (lastBlock !== null && frame.blockId !== lastBlock && answer) answer += '\n\n';
          lastBlock = frame.blockId;
          answer += frame.chunk;
          content.textContent = answer;
          reply.scrollIntoView({ block: 'end' });
        } else if (frame.event === 'error') {
          failed = frame.error || 'Something went wrong.';
        }
      }).then(function () {
        if (!answer && !failed) { answer = ''; content.textContent = '(No answer.)'; }
        finish(failed);
      });
    }).catch(function () { finish('The chat could not be reached. Check your connection and try again.'); });
  });

  textarea.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); composer.requestSubmit(); }
  });

  start();
})();
