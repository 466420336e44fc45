import asyncio
import websockets
import json
from typing import Optional, Dict, Any, Callable
import uuid

class LLMGatewayClient:
    def __init__(self, url: str = "ws://localhost:9400"):
        self.url = url
        self.ws: Optional[websockets.WebSocketClientProtocol] = None
        self.session_id: Optional[str] = None
        self.pending_tool_calls: Dict[str, Any] = {}
        self.client_tools: Dict[str, Callable] = {}

    async def connect(self) -> None:
        """建立连接并获取 session_id"""
        self.ws = await websockets.connect(self.url)

        # 接收连接状态
        status_msg = json.loads(await self.ws.recv())
        if status_msg["type"] == "status":
            self.session_id = status_msg["data"]["session_id"]
            print(f"Connected. Session ID: {self.session_id}")

    async def register_tools(self, tools: list) -> None:
        """注册客户端工具"""
        request = {
            "type": "register_tools",
            "tools": tools
        }
        await self.ws.send(json.dumps(request))

        # 接收注册确认
        response = json.loads(await self.ws.recv())
        if response["type"] == "tools_registered":
            print(f"Registered {response['count']} tools")
            for tool in response["tools"]:
                if tool["status"] == "registered":
                    print(f"  - {tool['name']}: OK")
                else:
                    print(f"  - {tool['name']}: FAILED - {tool.get('error', 'Unknown error')}")

    def define_tool(self, name: str, description: str, parameters: dict):
        """装饰器：定义客户端工具"""
        def decorator(func):
            self.client_tools[name] = func
            return func
        return decorator

    async def send_text(self, text: str) -> str:
        """发送文本并获取响应"""
        if not self.ws:
            await self.connect()

        request = {
            "type": "text_input",
            "text": text,
            "session_id": self.session_id
        }
        await self.ws.send(json.dumps(request))

        # 接收响应
        while True:
            response = json.loads(await self.ws.recv())

            if response["type"] == "tool_call":
                # 服务端工具调用
                print(f"Server tool called: {response['tool_name']}")
                print(f"Result: {response['result']}")

            elif response["type"] == "tool_callback":
                # 客户端工具回调
                call_id = response["call_id"]
                tool_name = response["tool_name"]
                arguments = response.get("arguments", {})

                print(f"Client tool called: {tool_name} with {arguments}")

                # 执行工具
                try:
                    if tool_name in self.client_tools:
                        result = await self._execute_tool(tool_name, arguments)
                        await self._send_tool_result(call_id, result, success=True)
                    else:
                        await self._send_tool_result(
                            call_id,
                            success=False,
                            error=f"Tool '{tool_name}' not found"
                        )
                except Exception as e:
                    await self._send_tool_result(
                        call_id,
                        success=False,
                        error=str(e)
                    )

            elif response["type"] == "llm_response":
                return response["content"]

            elif response["type"] == "error":
                raise Exception(f"{response['code']}: {response['message']}")

    async def _execute_tool(self, tool_name: str, arguments: dict) -> Any:
        """执行客户端工具"""
        func = self.client_tools[tool_name]
        if asyncio.iscoroutinefunction(func):
            return await func(**arguments)
        else:
            return func(**arguments)

    async def _send_tool_result(self, call_id: str, result: Any = None,
                                success: bool = True, error: str = None) -> None:
        """发送工具执行结果"""
        message = {
            "type": "tool_result",
            "call_id": call_id,
            "success": success
        }
        if success:
            message["result"] = result
        else:
            message["error"] = error

        await self.ws.send(json.dumps(message))

    async def configure(self, **kwargs) -> None:
        """配置参数"""
        request = {"type": "configure", **kwargs}
        await self.ws.send(json.dumps(request))

    async def close(self) -> None:
        """关闭连接"""
        if self.ws:
            await self.ws.close()


# 使用示例
async def main():
    client = LLMGatewayClient()

    # 定义客户端工具
    tools_definition = [
        {
            "name": "get_battery",
            "description": "获取设备当前电量百分比",
            "parameters": {
                "type": "object",
                "properties": {},
                "required": []
            }
        },
        {
            "name": "set_volume",
            "description": "设置设备音量",
            "parameters": {
                "type": "object",
                "properties": {
                    "volume": {
                        "type": "integer",
                        "description": "音量值 0-100",
                        "minimum": 0,
                        "maximum": 100
                    }
                },
                "required": ["volume"]
            }
        }
    ]

    # 实现工具函数
    async def get_battery() -> dict:
        # 实际实现中这里会调用硬件接口
        return {"level": 85, "charging": False}

    async def set_volume(volume: int) -> dict:
        # 实际实现中这里会调用硬件接口
        return {"volume": volume, "status": "set"}

    try:
        await client.connect()
        await client.configure(enable_context=True)

        # 注册工具
        client.client_tools["get_battery"] = get_battery
        client.client_tools["set_volume"] = set_volume
        await client.register_tools(tools_definition)

        # 测试对话
        response = await client.send_text("我的电量还剩多少？")
        print(f"Response: {response}")

        response = await client.send_text("把音量调到50")
        print(f"Response: {response}")

    finally:
        await client.close()

if __name__ == "__main__":
    asyncio.run(main())
