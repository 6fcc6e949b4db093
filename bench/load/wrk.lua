-- Driven by bench/load/wrk.ts, which sets BENCH_WRK_DIR to a folder holding the request and
-- the expected answer. Each answer is checked (status and body); done() prints one JSON line.
local dir = os.getenv("BENCH_WRK_DIR")

local function slurp(name)
  local file = io.open(dir .. "/" .. name, "rb")
  if not file then return nil end
  local text = file:read("*a")
  file:close()
  return text
end

local function lines(name)
  local out = {}
  local text = slurp(name) or ""
  for line in text:gmatch("[^\n]+") do out[#out + 1] = line end
  return out
end

local settings = lines("settings")
local method = settings[1]
local expect_status = tonumber(settings[2])
local marker = settings[3] ~= "-" and settings[3] or nil
local consumers = tonumber(settings[4])
local contains = settings[5] ~= "-" and settings[5] or nil
-- The growth scenarios: each request's consumer and model drawn at random.
local random_consumers = settings[6] == "random"
local model_marker = settings[7] ~= nil and settings[7] ~= "-" and settings[7] or nil
local model_base = settings[8]
local models = tonumber(settings[9] or "0") or 0
local body = slurp("body")
local expect_body = slurp("expect")
local headers = {}
for _, line in ipairs(lines("headers")) do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  headers[name] = value
end

-- The run's own directory (a fresh temporary one per wrk run) makes the unique tokens of this
-- run differ from every earlier run's: the counter restarts at 1 each run, and a warm-up's
-- answers are still in the response cache when the measured round starts.
local run = (os.getenv("BENCH_WRK_DIR") or ""):match("([^/]+)$") or ""

local prefix, suffix
if marker then
  local at = body:find(marker, 1, true)
  prefix = body:sub(1, at - 1)
  suffix = body:sub(at + #marker)
end

local threads = {}
function setup(thread)
  thread:set("id", #threads)
  threads[#threads + 1] = thread
end

invalid = 0
wrong_status = 0
local counter = 0
local fixed

local function replace(text, mark, value)
  local at = text:find(mark, 1, true)
  if not at then return text end
  return text:sub(1, at - 1) .. value .. text:sub(at + #mark)
end

function init(args)
  math.randomseed(os.time() + id)
  if not marker and consumers == 0 and not model_marker then
    fixed = wrk.format(method, nil, headers, body)
  end
end

function request()
  if fixed then return fixed end
  counter = counter + 1
  if consumers > 0 then
    local n = random_consumers and math.random(0, consumers - 1) or (counter % consumers)
    headers["X-Consumer"] = "consumer-" .. n
  end
  local text = body
  if marker then text = prefix .. run .. "-" .. id .. "-" .. counter .. suffix end
  if model_marker then
    local n = math.random(0, models - 1)
    text = replace(text, model_marker, n == 0 and model_base or (model_base .. "-" .. n))
  end
  return wrk.format(method, nil, headers, text)
end

function response(status, hdrs, answer)
  if status ~= expect_status then
    wrong_status = wrong_status + 1
  elseif expect_body and answer ~= expect_body then
    invalid = invalid + 1
  elseif contains and not answer:find(contains, 1, true) then
    invalid = invalid + 1
  end
end

function done(summary, latency, requests)
  local bad, status = 0, 0
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("invalid")
    status = status + thread:get("wrong_status")
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"transport_errors":%d,"wrong_status":%d,"invalid":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, status, bad))
end
