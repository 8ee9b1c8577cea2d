-- wrk script: POST /v1/exchange on many independent chains. Each chain has at most one
-- exchange in flight: a chain goes back to its thread's queue when its response (which names
-- chain_id and the new token) arrives. A non-200 answer retires the chain and is counted.
-- With several wrk threads (-t N), thread i takes the lines i, i+N, i+2N, ...: no chain is
-- ever presented by two threads.
-- Usage: wrk -t N -s bench/wrk/exchange.lua URL -- TOKENS_FILE N   (lines: "<chain id> <token>")
local created = 0
local tokens, queue = {}, {}
local first, last = 1, 0
local failures = 0

function setup(thread)
  thread:set("index", created)
  created = created + 1
end

function init(args)
  local threads = tonumber(args[2] or "1")
  local number = 0
  for line in io.lines(args[1]) do
    if number % threads == (index or 0) then
      local chain, token = line:match("^(%x+) (%S+)$")
      tokens[chain] = token
      last = last + 1
      queue[last] = chain
    end
    number = number + 1
  end
end

function request()
  local chain = queue[first]
  if chain == nil then
    -- Every chain of this thread has an exchange in flight: more connections than chains.
    return wrk.format("POST", "/v1/exchange", { ["Authorization"] = "Bearer starved" })
  end
  queue[first] = nil
  first = first + 1
  return wrk.format("POST", "/v1/exchange", { ["Authorization"] = "Bearer " .. tokens[chain] })
end

function response(status, headers, body)
  if status ~= 200 then
    failures = failures + 1
    return
  end
  local chain = body:match('"chain_id":"(%x+)"')
  tokens[chain] = body:match('"token":"([^"]+)"')
  last = last + 1
  queue[last] = chain
end
