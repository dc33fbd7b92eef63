"""Vortex IPC: sans-IO framing, message codecs, and stream readers/writers."""

from .framing import MessageDecoder, MessageEncoder
from .messages import Message
from .reader import AsyncStreamReader, Batch, StreamReader, read_ipc
from .schema import MessageHeader, MessageType
from .writer import AsyncStreamWriter, StreamWriter, write_ipc

__all__ = [
    "MessageDecoder",
    "MessageEncoder",
    "Message",
    "MessageHeader",
    "MessageType",
    "Batch",
    "StreamReader",
    "AsyncStreamReader",
    "StreamWriter",
    "AsyncStreamWriter",
    "read_ipc",
    "write_ipc",
]
