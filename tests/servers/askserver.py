"""An SDK server (`MCPServer`, both eras) whose tools ask the client during the call, as
servers in the wild do: for the Studio's Try questions.

    python askserver.py

Tools: `signup()` asks a form (elicitation form mode: `name` string, `age` integer,
`newsletter` boolean; a standalone `elicitation/create` on a legacy session, an
`InputRequiredResult` round on 2026-07-28) and answers with what came back;
`summarize(text)` asks for a sampling (`sampling/createMessage`) and answers with the
model's text.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Elicit, MCPServer, Resolve, Sample
from mcp_types import SamplingMessage, TextContent
from pydantic import BaseModel, Field

app = MCPServer("askserver")


class Signup(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(description="Your age in years")
    newsletter: bool = Field(default=False, description="Send the newsletter")


def ask_signup() -> Any:
    return Elicit("Sign up for the example service", Signup)


def ask_summary(text: str) -> Any:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=text))], max_tokens=20)


def signup(d: Any) -> str:
    """Ask for a name, an age and a newsletter choice."""
    return f"action: accept; name={d.name}; age={d.age}; newsletter={d.newsletter}"


def summarize(text: str, summary: Any) -> str:
    """Ask the client's model for a summary of `text`."""
    return f"summary: {getattr(summary.content, 'text', summary.content)}"


# Real objects, not strings: the SDK resolves the annotations against this module.
ask_signup.__annotations__ = {"return": Elicit[Signup]}
signup.__annotations__ = {"d": Annotated[Signup, Resolve(ask_signup)], "return": str}
summarize.__annotations__ = {"text": str, "summary": Annotated[Any, Resolve(ask_summary)], "return": str}
app.add_tool(signup, name="signup")
app.add_tool(summarize, name="summarize")

if __name__ == "__main__":
    app.run()
