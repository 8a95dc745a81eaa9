// run.h5: attributes on the root, the candidates as columns (one checksummed byte dataset per
// field), sources and texts as byte datasets. Columns keep a commit of thousands of candidates
// to a few dozen HDF5 objects, so writing the whole database each generation stays cheap.
#include "r3/run_database.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <span>

#include "../capture/h5.hpp"
#include "image_file.hpp"
#include "r3/enum_names.hpp"
#include "r3/error.hpp"
#include "r3/files.hpp"
#include "r3/version.hpp"

namespace r3::run {

namespace {
constexpr EnumNames<CandidateLevel, 6> kLevels{{
    {CandidateLevel::original, "original"},
    {CandidateLevel::rebuilt, "rebuilt"},
    {CandidateLevel::source, "source"},
    {CandidateLevel::compiler, "compiler"},
    {CandidateLevel::launch, "launch"},
    {CandidateLevel::parameters, "parameters"},
}};
}  // namespace

std::string_view to_string(CandidateLevel level) { return name_of(kLevels, level); }

std::optional<CandidateLevel> candidate_level_from_string(std::string_view text) {
  return value_named(kLevels, text);
}

namespace {

using h5::Handle;

constexpr h5::ByteDatasetOptions kStored{1 << 16, 1};
// The tables' columns grow at every commit, which compresses again the chunk each one ends in:
// smaller chunks keep that to a few kilobytes a column.
constexpr h5::ByteDatasetOptions kGrowing{1 << 12, 1};

// Byte encodings of a column: fixed 8-byte little-endian words, or length-prefixed strings.
class ColumnWriter {
 public:
  void word(std::uint64_t value) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<std::byte>(value >> (8 * i)));
  }
  void number(double value) {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    word(bits);
  }
  void text(std::string_view value) {
    word(value.size());
    for (char c : value) bytes_.push_back(static_cast<std::byte>(c));
  }
  std::span<const std::byte> bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

class ColumnReader {
 public:
  ColumnReader(std::vector<std::byte> bytes, std::string name)
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  std::uint64_t word() {
    need(8);
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= std::uint64_t(bytes_[at_ + i]) << (8 * i);
    at_ += 8;
    return value;
  }
  double number() {
    std::uint64_t bits = word();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  std::string text() {
    std::uint64_t size = word();
    need(size);
    std::string value(reinterpret_cast<const char*>(bytes_.data() + at_), size);
    at_ += size;
    return value;
  }
  void finish() const {
    if (at_ != bytes_.size()) throw FormatError("column '" + name_ + "' has trailing bytes");
  }

 private:
  void need(std::uint64_t n) const {
    if (bytes_.size() - at_ < n) throw FormatError("column '" + name_ + "' is too short");
  }
  std::vector<std::byte> bytes_;
  std::string name_;
  std::size_t at_ = 0;
};

// One field of a record and how it is stored.
template <class Record>
struct Column {
  const char* name;
  std::function<void(const Record&, ColumnWriter&)> put;
  std::function<void(Record&, ColumnReader&)> get;
  std::uint64_t since = 1;  // the format version that added it; older files keep the default
};

template <class Record, class T>
Column<Record> word_column(const char* name, T Record::*field, std::uint64_t since = 1) {
  return {
      name,
      [field](const Record& c, ColumnWriter& w) { w.word(static_cast<std::uint64_t>(c.*field)); },
      [field](Record& c, ColumnReader& r) { c.*field = static_cast<T>(r.word()); }, since};
}

template <class Record>
Column<Record> number_column(const char* name, double Record::*field, std::uint64_t since = 1) {
  return {name, [field](const Record& c, ColumnWriter& w) { w.number(c.*field); },
          [field](Record& c, ColumnReader& r) { c.*field = r.number(); }, since};
}

template <class Record>
Column<Record> text_column(const char* name, std::string Record::*field, std::uint64_t since = 1) {
  return {name, [field](const Record& c, ColumnWriter& w) { w.text(c.*field); },
          [field](Record& c, ColumnReader& r) { c.*field = r.text(); }, since};
}

// An enum stored as its text (to_string), read back by `parse`; an unknown text is an error
// naming the column.
template <class Record, class Enum, class Parse>
Column<Record> enum_column(const char* name, Enum Record::*field, Parse parse) {
  return {name, [field](const Record& c, ColumnWriter& w) { w.text(to_string(c.*field)); },
          [field, parse, name](Record& c, ColumnReader& r) {
            const std::string text = r.text();
            auto value = parse(text);
            if (!value)
              throw FormatError("column '" + std::string(name) + "' holds '" + text +
                                "', which is none of its values");
            c.*field = *value;
          }};
}

const std::vector<Column<CandidateRecord>>& candidate_columns() {
  using C = CandidateRecord;
  static const std::vector<Column<C>> all = {
      word_column("id", &C::id),
      word_column("generation", &C::generation),
      word_column("parent", &C::parent),
      word_column("kernel", &C::kernel),
      {"source", [](const C& c, ColumnWriter& w) { w.text(c.source.hex()); },
       [](C& c, ColumnReader& r) {
         std::string hex = r.text();
         auto hash = Hash128::from_hex(hex);
         if (!hash) throw FormatError("column 'source' holds '" + hex + "', not a hash");
         c.source = *hash;
       }},
      enum_column("level", &C::level, candidate_level_from_string),
      text_column("plan", &C::plan),
      text_column("description", &C::description),
      enum_column("outcome", &C::outcome, outcome_from_string),
      text_column("message", &C::message),
      number_column("seconds", &C::seconds),
      number_column("min_seconds", &C::min_seconds),
      number_column("max_seconds", &C::max_seconds),
      number_column("compile_seconds", &C::compile_seconds),
      number_column("evaluation_seconds", &C::evaluation_seconds),
      word_column("registers", &C::registers),
      word_column("spilled_bytes", &C::spilled_bytes),
      word_column("shared_bytes", &C::shared_bytes),
      word_column("code_bytes", &C::code_bytes),
      word_column("evaluator", &C::evaluator),
      text_column("configuration", &C::configuration, 2),
      number_column("run_seconds", &C::run_seconds, 2),
  };
  return all;
}

const std::vector<Column<ConfirmationRecord>>& confirmation_columns() {
  using C = ConfirmationRecord;
  static const std::vector<Column<C>> all = {
      word_column("candidate", &C::candidate),
      word_column("kernel", &C::kernel),
      word_column("after_generation", &C::after_generation),
      word_column("round", &C::round),
      word_column("evaluator", &C::evaluator),
      word_column("repeats", &C::repeats),
      enum_column("outcome", &C::outcome, outcome_from_string),
      text_column("message", &C::message),
      number_column("seconds", &C::seconds),
      number_column("min_seconds", &C::min_seconds),
      number_column("max_seconds", &C::max_seconds),
  };
  return all;
}

const std::vector<Column<CodeRecord>>& code_columns() {
  using C = CodeRecord;
  static const std::vector<Column<C>> all = {
      word_column("candidate", &C::candidate),       word_column("kernel", &C::kernel),
      text_column("architecture", &C::architecture), text_column("toolkit", &C::toolkit),
      text_column("function", &C::function),         text_column("image", &C::image),
  };
  return all;
}

std::span<const std::byte> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

// Every dataset carries the hash of its bytes (since version 3): the chunks' Fletcher-32 sums
// cannot see a damaged chunk index that points one column at another column's chunk.
constexpr const char* kHashAttribute = "xxh3";

void write_hashed(hid_t parent, const std::string& name, std::span<const std::byte> bytes) {
  h5::write_bytes(parent, name, bytes, kStored);
  Handle dataset = h5::open_dataset(parent, name, name);
  h5::write_string_attribute(dataset, kHashAttribute, hash_bytes(bytes.data(), bytes.size()).hex());
}

std::vector<std::byte> read_all(hid_t parent, const std::string& name, std::string_view what,
                                std::uint64_t version) {
  Handle dataset = h5::open_dataset(parent, name, what);
  std::uint64_t size = h5::byte_dataset_size(dataset, what, h5::Stored::compressed);
  std::vector<std::byte> bytes(size);
  if (size > 0) h5::read_bytes(dataset, 0, bytes, what);
  if (h5::attribute_exists(dataset, kHashAttribute)) {
    std::string stored = h5::read_string_attribute(dataset, kHashAttribute, what);
    if (hash_bytes(bytes.data(), bytes.size()).hex() != stored)
      throw FormatError(std::string(what) + " does not match its hash (damaged)");
  } else if (version >= 3) {
    throw FormatError(std::string(what) + " has no hash attribute '" + kHashAttribute + "'");
  }
  return bytes;
}

std::string read_text(hid_t parent, const std::string& name, std::string_view what,
                      std::uint64_t version) {
  std::vector<std::byte> bytes = read_all(parent, name, what, version);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void sync_file(const std::filesystem::path& path, bool directory) {
  int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw IoError("open", path.string() + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  // Some file systems cannot sync directories; the rename is still atomic there.
  if (rc != 0 && !(directory && (error == EINVAL || error == EROFS)))
    throw IoError("fsync", path.string() + ": " + std::strerror(error));
}

template <class Record>
void read_table(hid_t root, const char* name, std::uint64_t version, std::vector<Record>& rows,
                const std::vector<Column<Record>>& columns) {
  Handle group = h5::open_group(root, name, name);
  for (const Column<Record>& column : columns) {
    if (column.since > version) continue;
    ColumnReader reader(read_all(group, column.name, column.name, version), column.name);
    for (Record& row : rows) column.get(row, reader);
    reader.finish();
  }
}

// What a table of the committed database holds: its rows, each column's size and hash so far,
// and the hash of the last row's encoding (DatabaseWriter's check that the committed rows are
// still the record's).
struct CommittedTable {
  std::size_t rows = 0;
  Hash128 last_row;
  std::vector<std::uint64_t> bytes;  // per column
  std::vector<Hasher> hashes;        // per column
};

template <class Record>
Hash128 row_hash(const Record& row, const std::vector<Column<Record>>& columns) {
  ColumnWriter writer;
  for (const Column<Record>& column : columns) column.put(row, writer);
  return hash_bytes(writer.bytes().data(), writer.bytes().size());
}

template <class Record>
bool holds_the_start_of(const CommittedTable& table, const std::vector<Record>& rows,
                        const std::vector<Column<Record>>& columns) {
  return rows.size() >= table.rows &&
         (table.rows == 0 || row_hash(rows[table.rows - 1], columns) == table.last_row);
}

// Columns of the rows that `table` lacks appended to the group `name` (made, with empty
// columns, in a new file), each column's hash attribute brought up to date.
template <class Record>
void append_rows(hid_t root, const char* name, bool new_file, const std::vector<Record>& rows,
                 const std::vector<Column<Record>>& columns, CommittedTable& table) {
  Handle group = new_file ? h5::create_group(root, name, name) : h5::open_group(root, name, name);
  if (new_file) {
    table = {};
    table.bytes.assign(columns.size(), 0);
    table.hashes.resize(columns.size());
    for (const Column<Record>& column : columns) {
      Handle dataset = h5::create_growing_bytes(group, column.name, kGrowing);
      h5::write_string_attribute(dataset, kHashAttribute, Hasher().digest().hex());
    }
  }
  if (rows.size() == table.rows) return;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    ColumnWriter writer;
    for (std::size_t r = table.rows; r < rows.size(); ++r) columns[c].put(rows[r], writer);
    Handle dataset = h5::open_dataset(group, columns[c].name, columns[c].name);
    h5::append_bytes(dataset, table.bytes[c], writer.bytes(), columns[c].name);
    table.bytes[c] += writer.bytes().size();
    table.hashes[c].update(writer.bytes());
    h5::write_string_attribute(dataset, kHashAttribute, table.hashes[c].digest().hex());
  }
  table.rows = rows.size();
  table.last_row = row_hash(rows.back(), columns);
}

}  // namespace

// The database as last committed: its file's bytes and what its tables hold. A commit opens
// those bytes as a file in memory (ImageFile: no backing store, so a full or vanished disk is an
// error of our own write), adds what the record gained, and closes it to take its new bytes.
struct DatabaseWriter::Committed {
  std::vector<std::byte> image;  // empty before the first commit
  // The image's size when it was last made whole. An image opened again does not know the
  // space its last commit freed (the chunks each column ended in, the search state replaced;
  // HDF5 keeps free space only while a file is open), so it grows by a few kilobytes a commit:
  // past twice this and kSlack it is made whole again, which costs one whole write now and
  // then (the host demo from 460 to 2000 candidates: every 45-115 commits of 4) and keeps the
  // copies of the image small.
  std::size_t whole_size = 0;
  static constexpr std::size_t kSlack = std::size_t{256} << 10;
  bool worth_remaking() const { return image.size() > 2 * whole_size + kSlack; }
  std::set<Hash128> sources;
  std::optional<std::string> tune_yaml;
  CommittedTable candidates, confirmations, codes;

  // Whether the record is this database grown: its committed rows are still the record's (the
  // last one of each table, checked) and it still holds every committed source (by hash: a
  // source replaced by another, the count unchanged, is not a record grown).
  bool grown_into(const RunRecord& record) const {
    return holds_the_start_of(candidates, record.candidates, candidate_columns()) &&
           holds_the_start_of(confirmations, record.confirmations, confirmation_columns()) &&
           holds_the_start_of(codes, record.codes, code_columns()) &&
           std::all_of(sources.begin(), sources.end(),
                       [&](const Hash128& hash) { return record.sources.contains(hash); });
  }

  // The new image: the last one (if any) with what `record` added.
  std::vector<std::byte> add(const std::filesystem::path& path, const RunRecord& record) {
    const bool new_file = image.empty();
    ImageFile file(path, image, "the run database");
    {                // every object closed before the file is
      Handle root = h5::open_group(file.id(), "/", "run database");
      if (new_file) {
        h5::write_string_attribute(root, "format", kRunFormat);
        h5::write_uint_attribute(root, "version", kRunVersion);
        h5::create_group(root, "sources", "sources");
      }
      h5::write_string_attribute(root, "r3_version", record.r3_version);
      h5::write_string_attribute(root, "tune_file", record.tune_file);
      h5::write_uint_attribute(root, "generations", record.generations);
      h5::write_double_attribute(root, "elapsed_seconds", record.elapsed_seconds);
      h5::write_uint_attribute(root, "sessions", record.sessions);
      h5::write_uint_attribute(root, "candidate_count", record.candidates.size());
      h5::write_uint_attribute(root, "source_count", record.sources.size());
      h5::write_uint_attribute(root, "confirmation_count", record.confirmations.size());
      h5::write_uint_attribute(root, "code_count", record.codes.size());
      if (tune_yaml != record.tune_yaml) {
        replace_hashed(root, "tune_yaml", as_bytes(record.tune_yaml));
        tune_yaml = record.tune_yaml;
      }
      replace_hashed(root, "search_state", as_bytes(record.search_state));
      // The sources not committed yet (grown_into: every committed one is still there).
      std::optional<Handle> group;
      for (const auto& [hash, text] : record.sources) {
        if (sources.contains(hash)) continue;
        if (!group) group.emplace(h5::open_group(root, "sources", "sources"));
        write_hashed(*group, hash.hex(), as_bytes(text));
        sources.insert(hash);
      }
      append_rows(root, "candidates", new_file, record.candidates, candidate_columns(), candidates);
      append_rows(root, "confirmations", new_file, record.confirmations, confirmation_columns(),
                  confirmations);
      append_rows(root, "codes", new_file, record.codes, code_columns(), codes);
    }
    return file.close();
  }

 private:
  static void replace_hashed(hid_t parent, const std::string& name,
                             std::span<const std::byte> bytes) {
    if (h5::link_exists(parent, name))
      h5::check(H5Ldelete(parent, name.c_str(), H5P_DEFAULT), "H5Ldelete", name);
    write_hashed(parent, name, bytes);
  }
};

namespace {

// Writes `bytes` to a new file at `path` and flushes it to disk; errors name the file and say
// why ("No space left on device").
void write_synced(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("open", path.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      throw IoError("write", path.string() + ": " + std::strerror(error));
    }
    done += static_cast<std::size_t>(n);
  }
  int rc = ::fsync(fd);
  int error = errno;
  if (::close(fd) != 0 && rc == 0) rc = -1, error = errno;
  if (rc != 0) throw IoError("fsync", path.string() + ": " + std::strerror(error));
}

}  // namespace

DatabaseWriter::DatabaseWriter() = default;
DatabaseWriter::~DatabaseWriter() = default;
DatabaseWriter::DatabaseWriter(DatabaseWriter&&) noexcept = default;
DatabaseWriter& DatabaseWriter::operator=(DatabaseWriter&&) noexcept = default;

void DatabaseWriter::commit(const std::filesystem::path& file, const RunRecord& record) {
  std::filesystem::path temporary = file;
  temporary += ".tmp-" + std::to_string(::getpid());
  if (committed_ && (!committed_->grown_into(record) || committed_->worth_remaking()))
    committed_.reset();
  if (!committed_) committed_ = std::make_unique<Committed>();
  const bool whole = committed_->image.empty();
  try {
    std::vector<std::byte> image;
    {
      h5::Session session(temporary.string());
      image = committed_->add(temporary, record);
    }
    try {
      write_synced(temporary, image);
    } catch (...) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw;
    }
    if (::rename(temporary.c_str(), file.c_str()) != 0) {
      int error = errno;
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw IoError("rename",
                    temporary.string() + " -> " + file.string() + ": " + std::strerror(error));
    }
    committed_->image = std::move(image);
    if (whole) committed_->whole_size = committed_->image.size();
  } catch (...) {
    committed_.reset();  // what it holds is not what the file holds: the next commit writes all
    throw;
  }
  sync_file(file.parent_path().empty() ? "." : file.parent_path(), true);
}

void write_run_database(const std::filesystem::path& file, const RunRecord& record) {
  DatabaseWriter().commit(file, record);
}

namespace {

bool holds_run_database(const std::filesystem::path& file) {
  if (not_a_readable_file(file)) return false;
  h5::Session session(file.string());
  if (h5::is_hdf5_file(file.c_str()) <= 0) return false;
  hid_t id = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) return false;
  Handle handle(id, H5Fclose);
  if (!h5::attribute_exists(handle, "format")) return false;
  try {
    return h5::read_string_attribute(handle, "format", "run database") == kRunFormat;
  } catch (const Error&) {
    return false;
  }
}

RunRecord read_database(const std::filesystem::path& file) {
  ErrorContext context = in_file(file.string());
  if (auto why = not_a_readable_file(file)) throw IoError("open", "the run database " + *why, context);
  h5::Session session(file.string());
  htri_t is_hdf5 = h5::is_hdf5_file(file.c_str());
  if (is_hdf5 <= 0)
    throw FormatError("not an HDF5 file: expected an r3 run database (run.h5)", context);
  hid_t id = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0)
    throw FormatError("damaged run database (HDF5: " + h5::error_stack_message() + ")", context);
  Handle handle(id, H5Fclose);
  try {
    Handle root = h5::open_group(handle, "/", "run database");
    std::string format = h5::attribute_exists(root, "format")
                             ? h5::read_string_attribute(root, "format", "run database")
                             : std::string("(none)");
    if (format != kRunFormat)
      throw FormatError("format '" + format + "' is not an r3 run database ('r3-run')");
    std::uint64_t version = h5::read_uint_attribute(root, "version", "run database");
    if (version > kRunVersion)
      throw FormatError("run database version " + std::to_string(version) +
                        " is newer than this r3 reads (" + std::to_string(kRunVersion) +
                        "); use a newer r3");
    RunRecord record;
    record.r3_version = h5::read_string_attribute(root, "r3_version", "run database");
    record.tune_file = h5::read_string_attribute(root, "tune_file", "run database");
    record.generations =
        static_cast<std::uint32_t>(h5::read_uint_attribute(root, "generations", "run database"));
    record.elapsed_seconds = h5::read_double_attribute(root, "elapsed_seconds", "run database");
    record.sessions =
        static_cast<std::uint32_t>(h5::read_uint_attribute(root, "sessions", "run database"));
    std::uint64_t count = h5::read_uint_attribute(root, "candidate_count", "run database");
    std::uint64_t source_count = h5::read_uint_attribute(root, "source_count", "run database");
    record.tune_yaml = read_text(root, "tune_yaml", "tune.yaml text", version);
    record.search_state = read_text(root, "search_state", "search state", version);
    Handle sources = h5::open_group(root, "sources", "sources");
    for (const std::string& name : h5::child_names(sources, "sources")) {
      auto hash = Hash128::from_hex(name);
      if (!hash) throw FormatError("source '" + name + "' is not named by its hash");
      std::string text = read_text(sources, name, "source " + name, version);
      if (hash_bytes(text.data(), text.size()) != *hash)
        throw FormatError("source " + name + " does not match its hash (damaged)");
      record.sources.emplace(*hash, std::move(text));
    }
    if (record.sources.size() != source_count)
      throw FormatError("holds " + std::to_string(record.sources.size()) + " sources, expected " +
                        std::to_string(source_count));
    record.candidates.resize(count);
    read_table(root, "candidates", version, record.candidates, candidate_columns());
    if (version >= 2) {
      record.confirmations.resize(
          h5::read_uint_attribute(root, "confirmation_count", "run database"));
      read_table(root, "confirmations", version, record.confirmations, confirmation_columns());
    }
    if (version >= 4) {
      record.codes.resize(h5::read_uint_attribute(root, "code_count", "run database"));
      read_table(root, "codes", version, record.codes, code_columns());
    }
    for (const CandidateRecord& c : record.candidates) {
      if (!record.sources.contains(c.source))
        throw FormatError("candidate " + std::to_string(c.id) + " refers to source " +
                          c.source.hex() + ", which the database does not hold");
    }
    return record;
  } catch (const Error& e) {
    if (!e.context().file.empty()) throw;
    throw FormatError(e.message(), context);
  }
}

}  // namespace

RunRecord read_run_database(const std::filesystem::path& file) {
  h5::rehearse_read(file.string(), "the run database", [&] { read_database(file); });
  return read_database(file);
}

std::optional<RunRecord> read_if_run_database(const std::filesystem::path& file) {
  h5::rehearse_read(file.string(), "the file", [&] {
    if (holds_run_database(file)) read_database(file);
  });
  if (!holds_run_database(file)) return std::nullopt;
  return read_database(file);
}

}  // namespace r3::run
