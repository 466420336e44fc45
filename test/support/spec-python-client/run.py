"""Runs the LLM gateway spec's Python client (section 10.1) against a gateway.

llm_gateway_client.py beside this file is the spec's example byte for byte, usage example
included; nothing in it is changed. This driver only points it at the gateway under test
(the example's URL is fixed to ws://localhost:9400, so the constructor's default is replaced)
and then:

  main      runs the example's own main() as written: configure, register two device
            tools, two turns that call them
  session   the client's methods on server tools, a mixed turn, and an error frame

Usage: run.py <ws-url> <main|session>. Everything the client prints goes to stdout;
this driver adds "Response: ..." and "Raised: ..." lines.
"""

import asyncio
import sys

import llm_gateway_client
from llm_gateway_client import LLMGatewayClient


async def session(url: str) -> None:
    client = LLMGatewayClient(url)

    async def get_battery() -> dict:
        return {"level": 85, "charging": False}

    async def set_volume(volume: int) -> dict:
        return {"volume": volume, "status": "set"}

    await client.connect()
    client.client_tools["get_battery"] = get_battery
    client.client_tools["set_volume"] = set_volume
    await client.register_tools([
        {"name": "get_battery", "description": "获取设备当前电量百分比",
         "parameters": {"type": "object", "properties": {}, "required": []}},
        {"name": "set_volume", "description": "设置设备音量",
         "parameters": {"type": "object", "properties": {"volume": {"type": "integer", "minimum": 0, "maximum": 100}},
                        "required": ["volume"]}},
    ])
    await client.configure(temperature=0.3)
    print(f"Response: {await client.send_text('今天天气怎么样？')}")
    print(f"Response: {await client.send_text('看看天气，再把音量调到30')}")
    try:
        await client.send_text("")
    except Exception as error:  # the client raises a bare Exception for an error frame
        print(f"Raised: {error}")
    print(f"Response: {await client.send_text('你好')}")
    await client.close()


def run() -> None:
    url, scenario = sys.argv[1], sys.argv[2]
    LLMGatewayClient.__init__.__defaults__ = (url,)
    if scenario == "main":
        asyncio.run(llm_gateway_client.main())
    elif scenario == "session":
        asyncio.run(session(url))
    else:
        sys.exit(f"unknown scenario {scenario!r}: main or session")


if __name__ == "__main__":
    run()
