"""A server of our own whose tools are described in Korean and Japanese, for
bench.tools: queries in those languages must find them by the content store's
tokenizer (CJK runs as bigrams), which bm25s's default tokenizer cannot split."""

from __future__ import annotations

from nativemcp.workers import Server

server = Server("office", description="사무 도구 / オフィスの道具")


@server.tool
def save_memo(title: str, body: str) -> str:
    """새 메모를 저장합니다. 제목과 본문을 받아 메모장에 기록합니다."""
    return title


@server.tool
def find_memos(keyword: str) -> list[str]:
    """저장된 메모에서 검색어가 들어간 메모를 찾습니다."""
    return []


@server.tool
def book_meeting_room(room: str, start: str, hours: int = 1) -> str:
    """회의실을 예약합니다. 회의실 이름과 시작 시간, 사용 시간을 지정합니다."""
    return room


@server.tool
def exchange_rate(base: str, target: str) -> float:
    """두 통화 사이의 오늘 환율을 알려 줍니다."""
    return 1.0


@server.tool
def translate_text(text: str, language: str) -> str:
    """문장을 다른 언어로 번역합니다."""
    return text


@server.tool
def submit_expense(amount: int, reason: str) -> str:
    """경비 청구서를 제출합니다. 금액과 사유를 적습니다."""
    return reason


@server.tool
def send_mail(to: str, subject: str, body: str) -> str:
    """宛先に電子メールを送信します。件名と本文を指定します。"""
    return to


@server.tool
def weather_forecast(city: str) -> str:
    """指定した都市の明日の天気予報を調べます。"""
    return city


@server.tool
def request_leave(start: str, days: int) -> str:
    """有給休暇を申請します。開始日と日数を指定します。"""
    return start


@server.tool
def shorten_url(url: str) -> str:
    """長いURLを短縮リンクに変換します。"""
    return url


@server.tool
def print_document(path: str, copies: int = 1) -> str:
    """文書をプリンターで印刷します。部数を指定できます。"""
    return path


@server.tool
def schedule_reminder(when: str, message: str) -> str:
    """指定した日時にリマインダーを設定して通知します。"""
    return message
