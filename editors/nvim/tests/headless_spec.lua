-- Headless end-to-end test of ccd.nvim against a running daemon.
--
--   CCD_SOCKET_DIR=... CCD_TEST_SESSION=<id> \
--     nvim --headless -u NONE -i NONE -n --cmd 'set rtp+=editors/nvim' -l editors/nvim/tests/headless_spec.lua
--
-- The session must be held by ccd and idle at its prompt (the fake claude
-- in CI, with turns long enough that `busy` is seen: FAKE_CLAUDE_TURN_MS).
-- CCD_TEST_SEARCH_SESSION names a dead conversation whose transcript says
-- CCD_TEST_SEARCH_PHRASE (`:CcdSearch` must find it and resume it).
-- `ccd` must be on PATH (or CCD_BIN). Exits 0 on success; otherwise prints
-- what failed to stderr and exits 1.

local T = tonumber(os.getenv('CCD_TEST_TIMEOUT_MS') or '') or 20000

local function log(msg)
  io.stdout:write('[headless_spec] ' .. msg .. '\n')
  io.stdout:flush()
end

local notes = {} -- every vim.notify call: { msg, level }
local events_seen = {} -- every event (on_event hook)

local function dump()
  local out = { 'notifications:' }
  for _, n in ipairs(notes) do
    table.insert(out, ('  [%s] %s'):format(tostring(n.level), n.msg))
  end
  table.insert(out, 'events:')
  for _, e in ipairs(events_seen) do
    table.insert(out, '  ' .. vim.json.encode(e))
  end
  return table.concat(out, '\n')
end

local function fail(msg)
  io.stderr:write('[headless_spec] FAIL: ' .. msg .. '\n' .. dump() .. '\n')
  io.stderr:flush()
  os.exit(1)
end

local function check(cond, msg)
  if not cond then
    fail(msg)
  end
end

--- Waits until `pred()` is truthy; fails with `what` after the timeout.
local function wait_for(what, pred, timeout)
  local value
  local ok = vim.wait(timeout or T, function()
    value = pred()
    return value ~= nil and value ~= false
  end, 20)
  if not ok then
    fail('timed out waiting for ' .. what)
  end
  return value
end

local sid = os.getenv('CCD_TEST_SESSION')
check(sid and #sid >= 8, 'CCD_TEST_SESSION is not set')
check(os.getenv('CCD_SOCKET_DIR'), 'CCD_SOCKET_DIR is not set (the test never uses the default socket)')
local bin = os.getenv('CCD_BIN') or 'ccd'
check(vim.fn.executable(bin) == 1, bin .. ' is not executable (put ccd on PATH or set CCD_BIN)')
local v = vim.version()
log(('Neovim %d.%d.%d, session %s, socket dir %s'):format(v.major, v.minor, v.patch, sid, os.getenv('CCD_SOCKET_DIR')))

-- Record notifications instead of showing them.
vim.notify = function(msg, level)
  table.insert(notes, { msg = msg, level = level })
end

local function find_note(pat, level)
  for _, n in ipairs(notes) do
    if n.msg:find(pat) and (level == nil or n.level == level) then
      return n
    end
  end
end

-- The plugin, as a user loads it (plugin/ then setup()).
vim.cmd('runtime plugin/ccd.lua')
check(vim.fn.exists(':Ccd') == 2, ':Ccd is not defined by plugin/ccd.lua')
for _, c in ipairs({ 'CcdObserve', 'CcdFork', 'CcdKill', 'CcdActions', 'CcdSearch' }) do
  check(vim.fn.exists(':' .. c) == 2, ':' .. c .. ' is not defined')
end

local ccd = require('ccd')
local rpc = require('ccd.rpc')
local events = require('ccd.events')
local picker = require('ccd.picker')
ccd.setup({
  ccd_bin = bin,
  open = 'tabnew',
  reconnect_ms = 500,
  on_event = function(ev)
    table.insert(events_seen, ev)
  end,
})
check(
  rpc.socket_path() == os.getenv('CCD_SOCKET_DIR') .. '/ccd.sock',
  'socket path: ' .. rpc.socket_path()
)

-- (1) Listing through the plugin's rpc module.
wait_for('the event subscription', function()
  return events.subscribed
end)
local client = rpc.shared()
check(client.hello and client.hello.protocol == 1, 'hello: ' .. vim.inspect(client.hello))
log('connected: daemon ' .. tostring(client.hello.daemon_version))

local listed
picker.list({}, function(err, sessions)
  listed = { err = err, sessions = sessions }
end)
wait_for('sessions.list', function()
  return listed
end)
check(not listed.err, 'sessions.list failed: ' .. vim.inspect(listed.err))
local mine
for _, s in ipairs(listed.sessions) do
  if s.session_id == sid then
    mine = s
  end
end
check(mine, ('session %s not listed: %s'):format(sid, vim.inspect(listed.sessions)))
check(mine.state == 'live', 'state: ' .. tostring(mine.state))
check(type(mine.cwd) == 'string' and mine.cwd:sub(1, 1) == '/', 'cwd: ' .. tostring(mine.cwd))
check(type(mine.ccd) == 'table' and mine.ccd.holder, 'not held by ccd: ' .. vim.inspect(mine.ccd))
check(mine.status == 'idle' or mine.status == 'busy' or mine.status == 'waiting', 'status: ' .. tostring(mine.status))
check(type(mine.pid) == 'number' and mine.pid > 0, 'pid: ' .. tostring(mine.pid))
check(type(mine.writers) == 'table' and #mine.writers == 1, 'writers: ' .. vim.inspect(mine.writers))
local line = picker.format(listed.sessions)[1]
for i, s in ipairs(listed.sessions) do
  if s == mine then
    line = picker.format(listed.sessions)[i]
  end
end
check(line:find(sid:sub(1, 8), 1, true) and line:find('live', 1, true), 'picker line: ' .. line)
check(line:find(vim.fn.fnamemodify(mine.cwd, ':t'), 1, true), 'picker line lacks the cwd: ' .. line)
-- What the session costs: its memory, as the daemon measured it.
check(type(mine.cost) == 'table' and type(mine.cost.memory_bytes) == 'number' and mine.cost.memory_bytes > 0,
  'no cost: ' .. vim.inspect(mine.cost))
local memcell = picker.size(mine.cost.memory_bytes)
check(memcell:match('^[%d.]+[KMG]?$') and line:find(' ' .. memcell .. '  ', 1, true), ('picker line lacks the memory %s: %s'):format(memcell, line))
check(picker.size(1288490189) == '1.2G' and picker.size(641728512) == '612M' and picker.size(35000) == '34K',
  'sizes are written as ccd ls writes them')
log('listed: ' .. line)

-- What a conversation cost, when the daemon counts it: its tokens and
-- dollars as `ccd ls` writes them, `-` when not counted.
do
  local costly = {
    session_id = 'c0ffee00-0000-4000-8000-000000000001',
    state = 'dead',
    cwd = '/w/p',
    usage = { total_tokens = 1234567, cost_usd = 3.456, unpriced = {} },
  }
  local unpriced = {
    session_id = 'c0ffee00-0000-4000-8000-000000000002',
    state = 'dead',
    cwd = '/w/q',
    usage = { total_tokens = 48000, cost_usd = 0.5, unpriced = { 'claude-next' } },
  }
  local bare = { session_id = 'c0ffee00-0000-4000-8000-000000000003', state = 'dead', cwd = '/w/r' }
  local lines = picker.format({ costly, unpriced, bare })
  check(lines[1]:find(' 1%.2M +%$3%.46  /w/p'), 'tokens and dollars: ' .. lines[1])
  check(lines[2]:find('  48k  %$0%.50%+  /w/q'), 'an unpriced model: ' .. lines[2])
  check(lines[3]:find('  %- +%-  /w/r'), 'not counted: ' .. lines[3])
  if type(mine.usage) == 'table' then
    local cell = picker.tokens_text(mine.usage.total_tokens)
    check(line:find(' ' .. cell .. '  ', 1, true), ('picker line lacks the tokens %s: %s'):format(cell, line))
  end
end

-- (2) An event arrives and becomes a notification: a turn (busy -> idle)
-- started through a second connection of the rpc module.
local other = rpc.new({ autostart = false })
local sent
wait_for('session.send to be accepted', function()
  local res, err = other:request_sync('session.send', { session = sid, text = 'hello from nvim' }, 5000)
  if res then
    sent = res
    return true
  end
  if err and err.code ~= -32008 then -- -32008: not at the prompt yet
    fail('session.send: ' .. vim.inspect(err))
  end
  vim.wait(200)
  return false
end)
check(sent.session == sid, 'session.send answered for ' .. tostring(sent.session))
local turn = wait_for('the "turn finished" notification', function()
  return find_note('turn finished')
end)
check(turn.msg:find(sid:sub(1, 8), 1, true), 'notification without the session: ' .. turn.msg)
check(turn.level == vim.log.levels.INFO, 'turn notification level: ' .. tostring(turn.level))
log('notified: ' .. turn.msg)

-- (2b) A permission prompt: the notification names the session, the tool
-- and the command; :CcdApprove answers it (the prompt the event named).
check(vim.fn.exists(':CcdApprove') == 2 and vim.fn.exists(':CcdDeny') == 2, ':CcdApprove / :CcdDeny are not defined')
local function screen_has(text)
  local res = other:request_sync('session.screen', { session = sid }, 5000)
  return res and table.concat(res.lines or {}, '\n'):find(text, 1, true)
end
local function ask(text)
  wait_for('session.send of ' .. text, function()
    local res, err = other:request_sync('session.send', { session = sid, text = text }, 5000)
    if res then
      return true
    end
    if err and err.code ~= -32008 then
      fail('session.send: ' .. vim.inspect(err))
    end
    vim.wait(200)
    return false
  end)
end
ask('perm echo approved')
local asked = wait_for('the permission notification', function()
  return find_note('asks permission.*echo approved')
end)
check(asked.msg:find(sid:sub(1, 8), 1, true), 'permission notification without the session: ' .. asked.msg)
check(asked.msg:find('Bash command', 1, true), 'permission notification without the tool: ' .. asked.msg)
check(asked.level == vim.log.levels.WARN, 'permission notification level: ' .. tostring(asked.level))
check(events.pending[sid] and #events.pending[sid].prompt == 16, 'pending prompt: ' .. vim.inspect(events.pending))
log('notified: ' .. asked.msg)
vim.cmd('CcdApprove')
wait_for('the "approved" notification', function()
  return find_note('approved ' .. sid:sub(1, 8))
end)
wait_for('the approved turn on the screen', function()
  return screen_has('echo: perm echo approved')
end)
wait_for('the prompt to leave the pending list', function()
  return events.pending[sid] == nil
end)
log('approved through :CcdApprove')

-- Deny is an action of the picker while the session waits on a prompt.
ask('perm rm -rf build')
wait_for('the second permission notification', function()
  return find_note('asks permission.*rm %-rf build')
end)
local waiting_row = wait_for('the listing to show the prompt', function()
  local res = other:request_sync('sessions.get', { session = sid }, 5000)
  return res and res.ccd and res.ccd.permission_prompt and res
end)
local offered_actions
local saved_select = vim.ui.select
vim.ui.select = function(items, _, on_choice)
  offered_actions = items
  on_choice('deny')
end
picker.actions_menu(waiting_row)
vim.ui.select = saved_select
check(offered_actions and offered_actions[1] == 'approve' and offered_actions[2] == 'deny', 'actions offered: ' .. vim.inspect(offered_actions))
wait_for('the "denied" notification', function()
  return find_note('denied ' .. sid:sub(1, 8))
end)
wait_for('the refusal on the screen', function()
  return screen_has('User rejected the command')
end)
check(not screen_has('echo: perm rm -rf build'), 'a denied command ran')
log('denied through the picker')

-- (3) :Ccd picks (vim.ui.select, stubbed to choose our session) and opens
-- an attach terminal that shows the session's screen.
local offered
vim.ui.select = function(items, opts, on_choice)
  offered = {}
  local choice
  for _, item in ipairs(items) do
    table.insert(offered, opts.format_item and opts.format_item(item) or tostring(item))
    if type(item) == 'table' and item.session_id == sid then
      choice = item
    end
  end
  on_choice(choice)
end
vim.cmd('Ccd')
local buf = wait_for('the attach terminal', function()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.b[b].ccd_session == sid and vim.bo[b].buftype == 'terminal' then
      return b
    end
  end
end)
check(offered and #offered >= 1, 'the picker offered nothing')
local bufname = vim.api.nvim_buf_get_name(buf)
check(bufname:find('ccd://attach/' .. sid:sub(1, 8), 1, true), 'terminal buffer name: ' .. bufname)
local term_lines = {}
wait_for('the prompt marker ❯ in the terminal', function()
  term_lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for _, l in ipairs(term_lines) do
    if l:find('❯', 1, true) then
      return true
    end
  end
end)
log('terminal shows:\n' .. table.concat(vim.tbl_filter(function(l)
  return l ~= ''
end, term_lines), '\n'))
local job = vim.b[buf].ccd_job
check(vim.fn.jobwait({ job }, 0)[1] == -1, 'ccd attach is not running')

-- :checkhealth ccd finds the binary and the daemon.
vim.cmd('checkhealth ccd')
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
for _, want in ipairs({ 'protocol version 1', 'daemon ', 'socket directory' }) do
  check(health:find(want, 1, true), ('checkhealth lacks %q:\n%s'):format(want, health))
end
check(not health:find('ERROR', 1, true), 'checkhealth reports an error:\n' .. health)
log('checkhealth ok')

-- The observe action: a read-only mirror of the same screen.
local obuf, ojob = ccd.observe(sid)
check(obuf and ojob, 'observe opened no terminal')
wait_for('the prompt marker ❯ in the observe terminal', function()
  for _, l in ipairs(vim.api.nvim_buf_get_lines(obuf, 0, -1, false)) do
    if l:find('❯', 1, true) then
      return true
    end
  end
end)
log('observe terminal shows the prompt')

-- The fork action (session.fork by the full id, as the picker passes it).
local forked
do
  ccd.fork(sid, function(err, new_id)
    forked = { err = err, id = new_id }
  end)
  wait_for('session.fork', function()
    return forked
  end)
  check(not forked.err and forked.id and forked.id ~= sid, 'session.fork: ' .. vim.inspect(forked))
  log('forked into ' .. forked.id)
end

-- The kill action ends the session: an exit notification, and the attach
-- terminal's job ends.
local killed
ccd.kill(sid, { confirm = false }, function(err, res)
  killed = { err = err, res = res }
end)
wait_for('session.kill', function()
  return killed
end)
check(not killed.err and killed.res.exited, 'session.kill: ' .. vim.inspect(killed))
wait_for('the "exited" notification', function()
  return find_note('exited')
end)
local code = wait_for('ccd attach to end with the session', function()
  return vim.b[buf].ccd_exit_code
end)
log('ccd attach exited with ' .. code)
wait_for('ccd observe to end with the session', function()
  return vim.b[obuf].ccd_exit_code
end)

if forked then
  local killed_fork
  ccd.kill(forked.id, { confirm = false }, function(err, res)
    killed_fork = { err = err, res = res }
  end)
  wait_for('session.kill of the fork', function()
    return killed_fork
  end)
  check(not killed_fork.err, 'session.kill of the fork: ' .. vim.inspect(killed_fork))
end

-- A second writer is told in words, with the pids; a process that moved to
-- another conversation keeps its label.
local second = events.message(
  { type = 'session.attention', session = sid, reason = 'second_writer', pids = { 11, 22 } },
  'lbl'
)
check(second and second:find('several processes', 1, true) and second:find('11, 22', 1, true), 'second writer message: ' .. tostring(second))
events.handle({ type = 'session.appeared', session = 'aaaaaaaa-moved-from', cwd = '/x/proj', pid = 1, state = 'live', held = true })
events.handle({ type = 'session.id_changed', session = 'bbbbbbbb-moved-to', from = 'aaaaaaaa-moved-from', to = 'bbbbbbbb-moved-to', pid = 1, reason = 'clear', held = true })

-- (5) :CcdSearch: a dead conversation found by what was said in it; the
-- hit chosen opens as a session chosen in :Ccd does (attach: a dead one
-- resumed in its own folder).
do
  local planted = os.getenv('CCD_TEST_SEARCH_SESSION')
  local phrase = os.getenv('CCD_TEST_SEARCH_PHRASE')
  check(planted and phrase, 'CCD_TEST_SEARCH_SESSION / CCD_TEST_SEARCH_PHRASE are not set')
  -- Asked again until found: the daemon's index may still be catching up.
  local hit
  local deadline = vim.loop.now() + T
  while not hit do
    local got
    picker.search(phrase, {}, function(err, hits)
      got = { err = err, hits = hits }
    end)
    wait_for('sessions.search to answer', function()
      return got
    end)
    check(not got.err, 'sessions.search: ' .. vim.inspect(got.err))
    for _, h in ipairs(got.hits) do
      if h.session_id == planted then
        hit = h
      end
    end
    if not hit then
      check(vim.loop.now() < deadline, ('sessions.search never found %s: %s'):format(planted, vim.inspect(got.hits)))
      vim.wait(300)
    end
  end
  check(hit.state == 'dead', 'hit state: ' .. vim.inspect(hit))
  check(hit.snippet and #hit.snippet.matched > 0 and phrase:find(hit.snippet.matched:lower(), 1, true),
    'hit snippet: ' .. vim.inspect(hit.snippet))
  check(type(hit.folder) == 'string' and hit.folder:find('/searched$'), 'hit folder: ' .. tostring(hit.folder))
  local hline = picker.format_hits({ hit })[1]
  check(hline:find(planted:sub(1, 8), 1, true) and hline:find('[' .. hit.snippet.matched .. ']', 1, true),
    'hit line: ' .. hline)
  check(picker.snippet({ snippet = { before = 'a\27[31mb\n', matched = 'x', after = '\226\128\174c' } }) == 'a [31mb [x] c',
    'a snippet drives nothing: ' .. picker.snippet({ snippet = { before = 'a\27[31mb\n', matched = 'x', after = '\226\128\174c' } }))
  log('found: ' .. hline)

  local offered_hits
  vim.ui.select = function(items, opts, on_choice)
    offered_hits = {}
    local choice
    for _, item in ipairs(items) do
      table.insert(offered_hits, opts.format_item(item))
      if item.session_id == planted then
        choice = item
      end
    end
    on_choice(choice)
  end
  vim.cmd('CcdSearch ' .. phrase)
  local sbuf = wait_for('the attach terminal of the hit', function()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.b[b].ccd_session == planted and vim.bo[b].buftype == 'terminal' then
        return b
      end
    end
  end)
  vim.ui.select = saved_select
  check(offered_hits and #offered_hits >= 1, 'the search picker offered nothing')
  wait_for('the resumed conversation at its prompt', function()
    for _, l in ipairs(vim.api.nvim_buf_get_lines(sbuf, 0, -1, false)) do
      if l:find('❯', 1, true) then
        return true
      end
    end
  end)
  local resumed = wait_for('the hit held by ccd', function()
    local res = other:request_sync('sessions.get', { session = planted }, 5000)
    return res and res.ccd and res.state == 'live' and res
  end)
  check(resumed.cwd and resumed.cwd:find('/searched$'), 'resumed in its own folder: ' .. tostring(resumed.cwd))
  log('opened the hit: ' .. planted)
  local killed_hit
  ccd.kill(planted, { confirm = false }, function(err, res)
    killed_hit = { err = err, res = res }
  end)
  wait_for('session.kill of the resumed hit', function()
    return killed_hit
  end)
end

log('all checks passed')
os.exit(0)
