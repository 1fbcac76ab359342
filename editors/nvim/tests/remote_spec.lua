-- Headless test of ccd.nvim against another machine (`host`): the socket
-- client runs `ssh ... ccd dial-stdio` through vim.uv pipes, the picker
-- lists that machine's sessions and shows the host.
--
--   CCD_TEST_HOST=ssh://user@127.0.0.1:2222 CCD_TEST_SSH='ssh -F cfg' \
--   CCD_TEST_SESSION=<id there> nvim --headless -u NONE -i NONE -n \
--     --cmd 'set rtp+=editors/nvim' -l editors/nvim/tests/remote_spec.lua
--
-- Exits 0 after printing "all checks passed"; otherwise prints what failed
-- to stderr and exits 1.

local T = 30000

local function log(msg)
  io.stdout:write('[remote_spec] ' .. msg .. '\n')
  io.stdout:flush()
end

local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = msg, level = level })
end

local function fail(msg)
  local out = { msg, 'notifications:' }
  for _, n in ipairs(notes) do
    table.insert(out, ('  [%s] %s'):format(tostring(n.level), n.msg))
  end
  io.stderr:write('[remote_spec] FAIL: ' .. table.concat(out, '\n') .. '\n')
  io.stderr:flush()
  os.exit(1)
end

local function check(cond, msg)
  if not cond then
    fail(msg)
  end
end

local host = os.getenv('CCD_TEST_HOST')
local sid = os.getenv('CCD_TEST_SESSION')
local ssh = vim.split(os.getenv('CCD_TEST_SSH') or 'ssh', ' ', { trimempty = true })
check(host and sid, 'CCD_TEST_HOST and CCD_TEST_SESSION must be set')
local label = host:gsub('^ssh://', '')

vim.cmd('runtime plugin/ccd.lua')
local ccd = require('ccd')
ccd.setup({ events = false, host = host, ssh_command = ssh })
local rpc = require('ccd.rpc')
local picker = require('ccd.picker')

-- The host string is parsed, a bad one refused.
check(rpc.parse_host('ssh://u@h:22').port == 22, 'parse_host port')
check(rpc.parse_host('ssh://-oProxyCommand=x') == nil, 'parse_host refuses an option')

-- Connect through ssh; the remote daemon answers hello.
local hello, err = rpc.shared():connect_sync(nil, T)
check(hello and not err, 'connect through ssh: ' .. vim.inspect(err))
check(hello.server == 'ccd', 'hello from the remote ccd: ' .. vim.inspect(hello))
log('connected to ' .. label .. ' (protocol ' .. tostring(hello.protocol) .. ')')

-- The picker lists the remote session and shows the host.
local shown
vim.ui.select = function(items, opts, on_choice)
  shown = { prompt = opts.prompt, lines = {} }
  for i, it in ipairs(items) do
    shown.lines[i] = opts.format_item(it)
  end
  on_choice(nil)
end
picker.pick({}, function() end)
check(vim.wait(T, function()
  return shown ~= nil
end, 20), 'the picker was not shown')
local found
for _, l in ipairs(shown.lines) do
  if l:find(sid:sub(1, 8), 1, true) then
    found = l
  end
end
check(found, 'the remote session is not in the picker: ' .. vim.inspect(shown.lines))
check(found:sub(1, #label) == label, 'the picker line does not lead with the host: ' .. found)
check(shown.prompt:find(label, 1, true), 'the prompt does not name the host: ' .. shown.prompt)
log('picker: ' .. found)

-- A remote without ccd: one clear message.
local missing = rpc.new({ host = host, ssh_command = ssh, remote_ccd = 'ccd-not-installed' })
local _, merr = missing:connect_sync(nil, T)
check(merr and merr.message:find('was not found on the remote machine', 1, true),
  'a remote without ccd: ' .. vim.inspect(merr))
log('missing ccd: ' .. merr.message)

rpc.shared():close()
log('all checks passed')
os.exit(0)
